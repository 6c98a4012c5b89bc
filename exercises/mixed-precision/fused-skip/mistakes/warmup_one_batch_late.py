# mistake: advances the warm-up at the start of the next batch for the previous real update: the last real update never advances it
# expect-fail: warmup-on-real-steps
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
    """Train on every batch with AMP and a fused AdamW; advance the warm-up on real updates only. Return the
    number of real updates."""
    updates = 0
    pending = False
    for x, y in batches:
        if pending:
            scheduler.step()
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scale = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        pending = scaler.get_scale() >= scale
        updates += pending
    return updates
