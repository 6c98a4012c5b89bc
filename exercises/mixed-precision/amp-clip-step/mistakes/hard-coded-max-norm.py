# mistake: clips in the right order, but to a hard-coded 1.0 instead of the max_norm it was given
# expect-fail: unscale-then-clip
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    """One mixed-precision training iteration with gradient clipping. Return the loss."""
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        out = model(x)
        loss = loss_fn(out, y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()
