# mistake: advances the warm-up on real updates only, but returns the number of batches
# expect-fail: counts-real-steps
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
        scaler.step(optimizer)
        scaler.update()
        if scaler.get_scale() >= scale:
            scheduler.step()
        updates += 1
    return updates
