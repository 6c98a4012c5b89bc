import torch
from torch.profiler import ProfilerActivity, profile, record_function

LABELS = ("preprocess", "forward", "backward", "optimizer")


def preprocess(x):
    """Standardize each sample (row) to mean 0, standard deviation 1."""
    return (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    with record_function("preprocess"):
        x = preprocess(x)
    with record_function("forward"):
        loss = loss_fn(model(x), y)
    with record_function("backward"):
        loss.backward()
    with record_function("optimizer"):
        optimizer.step()
    return loss.detach()


def find_bottleneck(model, optimizer, loss_fn, batches):
    """Profile train_step over the batches; return the label of the slowest region."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for x, y in batches:
            train_step(model, optimizer, loss_fn, x, y)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=8))
    totals = {e.key: e.cpu_time_total for e in prof.key_averages() if e.key in LABELS}
    return max(totals, key=totals.get)
