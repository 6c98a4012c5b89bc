import torch
from torch.utils.checkpoint import checkpoint


def train_step(model, optimizer, loss_fn, x, y):
    """One training step; return the loss."""
    optimizer.zero_grad(set_to_none=True)
    h = x
    for block in model.blocks:
        h = checkpoint(block, h, use_reentrant=False)  # keep only the block's input
    loss = loss_fn(model.head(h), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def evaluate(model, x):
    """The model's outputs for x, for evaluation."""
    was_training = model.training
    model.eval()  # evaluation behaviour for dropout and batch norm (this model has neither)
    try:
        with torch.inference_mode():
            return model(x)
    finally:
        model.train(was_training)  # the caller's mode: a training loop goes on training
