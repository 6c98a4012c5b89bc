# mistake: calls the fused optimizer's step() directly, trusting the kernel to skip: without the scaler it gets no inf flag and steps on scaled, overflowing gradients
# expect-fail: through-the-scaler
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
    """Train on every batch with AMP and a fused AdamW; advance the warm-up on real updates only. Return the
    number of real updates."""
    updates = 0
    for x, y in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scale = scaler.get_scale()
        scaler.unscale_(optimizer)
        optimizer.step()
        scaler.update()
        if scaler.get_scale() >= scale:
            scheduler.step()
            updates += 1
    return updates
