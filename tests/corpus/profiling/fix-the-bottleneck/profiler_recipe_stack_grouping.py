# pattern: PyTorch tutorials, recipes/recipes/profiler_recipe.py "Examining stack traces": with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof: ...; print(prof.key_averages(group_by_stack_n=5).table(sort_by="self_cpu_time_total", row_limit=2)); the fix is the usual vectorisation
# class: profiler-stack-grouping
# expect: pass
# why: labelled regions, the steps run under the profiler with stacks recorded, the stack-grouped table is printed, and the label with the largest cpu_time_total among the labels is returned; the vectorised standardisation computes the same
import torch
from torch.profiler import ProfilerActivity, profile, record_function

REGIONS = ("preprocess", "forward", "backward", "optimizer")


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
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        for x, y in batches:
            train_step(model, optimizer, loss_fn, x, y)
    print(prof.key_averages(group_by_stack_n=5).table(sort_by="self_cpu_time_total", row_limit=5))
    averages = [e for e in prof.key_averages() if e.key in REGIONS]
    return max(averages, key=lambda e: e.cpu_time_total).key
