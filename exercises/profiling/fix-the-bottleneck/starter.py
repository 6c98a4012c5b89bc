import torch
from torch.profiler import ProfilerActivity, profile, record_function


def preprocess(x):
    """Standardize each sample (row) to mean 0, standard deviation 1."""
    rows = []
    for row in x:
        rows.append((row - row.mean()) / (row.std() + 1e-5))
    return torch.stack(rows)


def train_step(model, optimizer, loss_fn, x, y):
    x = preprocess(x)
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def find_bottleneck(model, optimizer, loss_fn, batches):
    """Profile train_step over the batches; return the label of the slowest region."""
    for x, y in batches:
        train_step(model, optimizer, loss_fn, x, y)
    return "?"
