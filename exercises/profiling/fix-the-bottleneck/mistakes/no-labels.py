# mistake: profiles the step but labels nothing, so the table shows only aten:: operators
# expect-fail: profiler-used
# expect-skip: names-bottleneck
import torch
from torch.profiler import ProfilerActivity, profile, record_function

LABELS = ("preprocess", "forward", "backward", "optimizer")


def preprocess(x):
    """Standardize each sample (row) to mean 0, standard deviation 1."""
    return (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)


def train_step(model, optimizer, loss_fn, x, y):
    x = preprocess(x)
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def find_bottleneck(model, optimizer, loss_fn, batches):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for x, y in batches:
            train_step(model, optimizer, loss_fn, x, y)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))
    return "preprocess"
