# pattern: replacing a hand-written per-row standardisation with torch.nn.functional.layer_norm(x, x.shape[-1:]), a common "use the built-in" refactor (and a common question on the PyTorch forum: layer_norm uses the biased variance and puts eps inside the square root)
# class: layer-norm-substitute
# expect: fail
# expect-fail: same-result
# why: layer_norm divides by sqrt(biased variance + eps), the original by (unbiased std + 1e-5): every input changes by a factor sqrt(n/(n-1)) (~0.8% for 64 features), so the losses differ from the original step's; profiling, naming and speed are right
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

LABELS = ("preprocess", "forward", "backward", "optimizer")


def preprocess(x):
    return F.layer_norm(x, x.shape[-1:], eps=1e-5)


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
