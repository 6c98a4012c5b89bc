# mistake: switches autocast to bfloat16 (and keeps a GradScaler): the run no longer underflows, but the exercise is float16 and its scaler
# expect-fail: autocast-scope
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    scaler = torch.amp.GradScaler('cuda')
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    return losses
