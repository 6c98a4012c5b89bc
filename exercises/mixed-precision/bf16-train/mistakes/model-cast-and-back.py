# mistake: trains a model converted to bfloat16 and converts it back to float32 before returning, so its final weights look right
# expect-fail: bf16-autocast
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    """Train for `steps` full-batch steps in mixed precision; return the loss of each step."""
    model.to(torch.bfloat16)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.float()
    return losses
