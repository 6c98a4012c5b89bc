# pattern: the profiler's non-context-manager form from the torch.profiler.profile docstring ("prof = torch.profiler.profile(...); prof.start(); for ...: code_to_profile(); prof.stop()"), as training scripts use it to profile a window of iterations chosen at run time (e.g. a --profile flag)
# class: profiler-start-stop
# expect: pass
# why: the steps run between prof.start() and prof.stop(), so the session covers them and its table is read; the fix is the usual vectorisation (issue 28: profiler-used said "never started torch.profiler.profile" while names-bottleneck, which read that profile, passed)
import torch
from torch.profiler import ProfilerActivity, profile, record_function

REGIONS = ("preprocess", "forward", "backward", "optimizer")


def preprocess(x):
    """Standardize each sample (row) to mean 0, standard deviation 1."""
    std, mean = torch.std_mean(x, dim=1, keepdim=True)
    return (x - mean) / (std + 1e-5)


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad(set_to_none=True)
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
    prof = profile(activities=[ProfilerActivity.CPU])
    prof.start()
    try:
        for x, y in batches:
            train_step(model, optimizer, loss_fn, x, y)
    finally:
        prof.stop()
    totals = {row.key: row.cpu_time_total for row in prof.key_averages() if row.key in REGIONS}
    return max(totals, key=totals.get)
