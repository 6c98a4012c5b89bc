# mistake: returns the scaled loss (65536 times too large) instead of the loss
# expect-fail: runs
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        loss = loss_fn(model(x), y)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    return scaled
