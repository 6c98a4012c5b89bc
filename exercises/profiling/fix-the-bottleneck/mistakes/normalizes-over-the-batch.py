# mistake: vectorizes along the wrong dimension, standardizing each feature over the batch instead of each sample
# expect-fail: same-result
import torch
from torch.profiler import ProfilerActivity, profile, record_function

LABELS = ("preprocess", "forward", "backward", "optimizer")


def preprocess(x):
    return (x - x.mean(dim=0)) / (x.std(dim=0) + 1e-5)


def train_step(model, optimizer, loss_fn, x, y):
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

