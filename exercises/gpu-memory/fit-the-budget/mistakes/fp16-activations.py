# mistake: adds fp16 autocast on top of checkpointing: less memory, but the loss and gradients change
# expect-fail: same-loss-and-grads
import torch
from torch.utils.checkpoint import checkpoint


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        h = x
        for block in model.blocks:
            h = checkpoint(block, h, use_reentrant=False)
        loss = loss_fn(model.head(h), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def evaluate(model, x):
    with torch.no_grad():
        return model(x)
