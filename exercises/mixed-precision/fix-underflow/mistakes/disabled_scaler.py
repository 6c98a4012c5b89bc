# mistake: the GradScaler is created disabled, so it scales nothing and gradients still underflow
# expect-fail: scaled-backward
# expect-skip: underflow-fixed
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    scaler = torch.amp.GradScaler('cuda', enabled=False)
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
