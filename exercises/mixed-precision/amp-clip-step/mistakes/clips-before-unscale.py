# mistake: clips the gradients while they are still multiplied by the loss scale, so every update shrinks to a sliver
# expect-fail: unscale-then-clip
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    """One mixed-precision training iteration with gradient clipping. Return the loss."""
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        out = model(x)
        loss = loss_fn(out, y)
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)  # still scaled
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()
