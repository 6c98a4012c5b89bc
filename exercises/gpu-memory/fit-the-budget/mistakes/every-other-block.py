# mistake: checkpoints only every other block, which halves too little
# expect-fail: under-budget
import torch
from torch.utils.checkpoint import checkpoint


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    h = x
    for i, block in enumerate(model.blocks):
        h = checkpoint(block, h, use_reentrant=False) if i % 2 else block(h)
    loss = loss_fn(model.head(h), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def evaluate(model, x):
    with torch.no_grad():
        return model(x)
