# mistake: "fixes" underflow by training in float32: the model learns, but mixed precision is gone
# expect-fail: autocast-scope, scaled-backward
# expect-skip: step-update-order
import torch


def train(model, optimizer, loss_fn, x, y, steps):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
