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
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        ema.update_parameters(model)
        steps += 1
    return steps
