# mistake: backward on the raw loss; scaler.step then divides unscaled gradients by the scale
# expect-fail: scaled-backward
# expect-skip: matches-reference, runs, step-update-order
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda'):
        loss = loss_fn(model(x), y)
    loss.backward()
    scaler.step(optimizer)
    scaler.update()
    return loss
