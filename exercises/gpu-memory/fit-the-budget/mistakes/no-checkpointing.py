# mistake: fixes evaluate but leaves the training step storing every activation
# expect-fail: under-budget
import torch
from torch.utils.checkpoint import checkpoint


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def evaluate(model, x):
    with torch.no_grad():
        return model(x)
