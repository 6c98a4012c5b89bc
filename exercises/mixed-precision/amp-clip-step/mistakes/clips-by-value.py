# mistake: clips each gradient value to max_norm with clip_grad_value_ instead of clipping their total norm
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
    torch.nn.utils.clip_grad_value_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()
