# mistake: updates the EMA right after backward, before scaler.step: on every batch, with the weights before the update
# expect-fail: ema-on-real-steps
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
        ema.update_parameters(model)
        scale_before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        if scaler.get_scale() < scale_before:
            continue
        scheduler.step()
        steps += 1
    return steps
