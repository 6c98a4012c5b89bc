# mistake: converts the model itself to bfloat16 (weights included) instead of letting autocast run the forward in it
# expect-fail: bf16-autocast
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    """Train for `steps` full-batch steps in mixed precision; return the loss of each step."""
    model.to(torch.bfloat16)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.bfloat16):
            loss = loss_fn(model(x.to(torch.bfloat16)), y.to(torch.bfloat16))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
