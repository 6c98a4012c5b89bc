# mistake: any change of the scale taken for a skip: a grown scale (after 3 real steps in a row) is no skip
# expect-fail: warmup-on-real-steps, counts-real-steps
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
        if scaler.get_scale() != scale:
            continue
        scheduler.step()
        updates += 1
    return updates
