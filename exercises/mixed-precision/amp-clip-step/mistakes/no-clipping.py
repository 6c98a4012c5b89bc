# mistake: the plain AMP step: max_norm is ignored and the gradients are never clipped
# expect-fail: unscale-then-clip
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    """One mixed-precision training iteration with gradient clipping. Return the loss."""
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        out = model(x)
        loss = loss_fn(out, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()
