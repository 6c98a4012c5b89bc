# mistake: checkpoints correctly but forgets zero_grad, so the last step's gradients are added in
# expect-fail: same-loss-and-grads
import torch
from torch.utils.checkpoint import checkpoint


def train_step(model, optimizer, loss_fn, x, y):
    h = x
    for i, block in enumerate(model.blocks):
        h = checkpoint(block, h, use_reentrant=False)
    loss = loss_fn(model.head(h), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def evaluate(model, x):
    with torch.no_grad():
        return model(x)
