# mistake: unscales by hand and calls optimizer.step() directly, so an overflowing step is not skipped
# expect-fail: step-update-order
# expect-skip: matches-reference
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    optimizer.step()
    scaler.update()
    return loss
