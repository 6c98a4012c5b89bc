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
        scaler.step(optimizer)  # a fused optimizer's step() runs even when the kernel skips the update
        scaler.update()
        if scaler.get_scale() >= scale:  # the scale only falls when the gradients held inf or NaN
            scheduler.step()
            updates += 1
    return updates
