# mistake: trains within budget but evaluates with autograd on, building a graph nobody uses
# expect-fail: eval-without-graph
import torch
from torch.utils.checkpoint import checkpoint


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    h = x
    for i, block in enumerate(model.blocks):
        h = checkpoint(block, h, use_reentrant=False)
    loss = loss_fn(model.head(h), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def evaluate(model, x):
    model.eval()
    return model(x)
