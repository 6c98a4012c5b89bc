# mistake: skips the scheduler, the EMA and the count correctly but never returns the count
# expect-fail: runs
# expect-skip: counts-real-steps
import torch


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    """Train on every batch with AMP; advance the scheduler and the EMA on real steps only. Return the
    number of real steps."""
    steps = 0
    for x, y in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scale_before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        if scaler.get_scale() < scale_before:
            continue
        scheduler.step()
        ema.update_parameters(model)
        steps += 1
