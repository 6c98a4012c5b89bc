# mistake: the starter as given: float16 autocast and no GradScaler, so the gradients underflow and training stalls
# expect-fail: bf16-autocast, learns-like-fp32
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    """Train for `steps` full-batch steps in bfloat16 autocast; return the loss of each step."""
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
