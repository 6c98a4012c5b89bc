# pattern: PyTorch tutorials, recipes/recipes/profiler_recipe.py: with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof: with record_function("..."): ...; print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)); the fix is the usual vectorisation, x.mean(dim=1, keepdim=True) / x.std(dim=1, keepdim=True)
# class: correct-profiler-recipe
# expect: pass
# why: labelled regions, the steps run under the profiler, the label with the largest cpu_time_total among the labels is returned, and the vectorised standardisation computes the same (unbiased std, + 1e-5)
import torch
from torch.profiler import ProfilerActivity, profile, record_function

REGIONS = ("preprocess", "forward", "backward", "optimizer")


def preprocess(x):
    """Standardize each sample (row) to mean 0, standard deviation 1."""
    mean = x.mean(dim=1, keepdim=True)
    std = x.std(dim=1, keepdim=True)
    return (x - mean) / (std + 1e-5)


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
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for x, y in batches:
            train_step(model, optimizer, loss_fn, x, y)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    averages = [e for e in prof.key_averages() if e.key in REGIONS]
    return max(averages, key=lambda e: e.cpu_time_total).key
