# mistake: compares the scale with != instead of <, so a step after which the scale grew counts as skipped
# expect-fail: scheduler-on-real-steps, counts-real-steps
# expect-skip: ema-on-real-steps, matches-reference
# may-pass: matches-reference (when the scale first grows late, e.g. in batch 12 of 16 with seed 1680063507, the few
# steps taken at the too-high learning rate move the weights less than the check's tolerance)
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
        if scaler.get_scale() != scale_before:
            continue
        scheduler.step()
        ema.update_parameters(model)
        steps += 1
    return steps
