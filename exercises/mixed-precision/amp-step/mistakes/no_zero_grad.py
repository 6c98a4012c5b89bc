# mistake: gradients are never cleared, so each backward adds to the previous step's gradients
# expect-fail: grads-cleared
# expect-skip: matches-reference
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    with torch.autocast(device_type='cuda'):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss
