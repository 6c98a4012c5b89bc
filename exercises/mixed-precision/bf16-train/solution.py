import torch


def train(model, optimizer, loss_fn, x, y, steps):
    """Train for `steps` full-batch steps in bfloat16 autocast; return the loss of each step."""
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
