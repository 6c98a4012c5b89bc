# mistake: backpropagates but never steps the optimizer, so the weights never change
# expect-fail: matches-reference
import torch


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    return loss
