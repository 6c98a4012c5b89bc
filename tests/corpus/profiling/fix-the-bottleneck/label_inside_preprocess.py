# pattern: the label written inside the function it names (`def preprocess(x): with record_function("preprocess"): ...`), as the PyTorch profiler recipe labels model code (recipes/recipes/profiler_recipe.py puts `with record_function("model_inference")` around the work it names); the answer is read from the table sorted by cpu_time_total
# class: label-inside-function
# expect: pass
# why: every call of preprocess opens the learner's preprocess region, so its row holds the original bottleneck when the grader swaps the original preprocess back in; the grader must keep that label (issue 19: it used to report "ran outside every labelled region")
import torch
from torch.profiler import ProfilerActivity, profile, record_function


def preprocess(x):
    with record_function("preprocess"):
        return (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)


def train_step(model, optimizer, loss_fn, x, y):
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
    ours = {"preprocess", "forward", "backward", "optimizer"}
    table = sorted(prof.key_averages(), key=lambda e: e.cpu_time_total, reverse=True)
    return next(e.key for e in table if e.key in ours)
