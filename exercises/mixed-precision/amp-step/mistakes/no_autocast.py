# mistake: the forward pass and loss run in float32: autocast was left out
# expect-fail: autocast-scope
# expect-skip: matches-reference
import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    optimizer.zero_grad()
    out = model(x)
    loss = loss_fn(out, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss
