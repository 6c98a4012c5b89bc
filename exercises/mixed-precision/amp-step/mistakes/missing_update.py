# mistake: scaler.update() is never called, so the second step raises and the scale never adapts
# expect-fail: step-update-order
# expect-skip: matches-reference, runs
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    return loss
