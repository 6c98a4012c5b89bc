# mistake: adds an enclosing 'train_step' label and returns the region with the largest total time: the enclosing one
# expect-fail: names-bottleneck
import torch
from torch.profiler import ProfilerActivity, profile, record_function

LABELS = ("train_step", "preprocess", "forward", "backward", "optimizer")


def preprocess(x):
    """Standardize each sample (row) to mean 0, standard deviation 1."""
    return (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)


def train_step(model, optimizer, loss_fn, x, y):
    with record_function("train_step"):
        with record_function("preprocess"):
            x = preprocess(x)
        with record_function("forward"):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            optimizer.step()
    return loss.detach()


def find_bottleneck(model, optimizer, loss_fn, batches):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for x, y in batches:
            train_step(model, optimizer, loss_fn, x, y)
    totals = {e.key: e.cpu_time_total for e in prof.key_averages() if e.key in LABELS}
    return max(totals, key=totals.get)

