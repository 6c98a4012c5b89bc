import torch


def train_step(model, optimizer, loss_fn, x, y):
    """One training step. Return the loss."""
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    # TODO: backpropagate and update the weights
    return loss
