# mistake: a correct GradScaler, but backward is called inside the autocast block
# expect-fail: autocast-scope
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    scaler = torch.cuda.amp.GradScaler()
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    return losses
