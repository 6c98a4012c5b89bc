import torch


def train_step(model, optimizer, scaler, loss_fn, x, y):
    """One mixed-precision training iteration. Return the loss."""
    optimizer.zero_grad()
    out = model(x)
    loss = loss_fn(out, y)
    loss.backward()
    optimizer.step()
    return loss
