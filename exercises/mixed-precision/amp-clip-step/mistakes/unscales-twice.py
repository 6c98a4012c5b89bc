# mistake: calls scaler.unscale_ again after clipping, which raises: unscale_ may run once per step
# expect-fail: runs, unscale-then-clip
# expect-skip: matches-reference, step-update-order
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y, max_norm):
    """One mixed-precision training iteration with gradient clipping. Return the loss."""
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        out = model(x)
        loss = loss_fn(out, y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()
