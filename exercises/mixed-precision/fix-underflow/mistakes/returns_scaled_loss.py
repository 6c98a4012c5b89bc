# mistake: the scaler is right, but the returned losses are the scaled ones (scaler.scale(loss).item(), 65536x the loss)
# expect-fail: runs
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    """Train for `steps` full-batch steps in mixed precision; return the loss of each step."""
    scaler = torch.amp.GradScaler('cuda')
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaled = scaler.scale(loss)
        scaled.backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(scaled.item())
    return losses
