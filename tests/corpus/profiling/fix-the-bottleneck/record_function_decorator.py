# pattern: torch.profiler.record_function used as a decorator on the function it labels (record_function is a context decorator; PyTorch's own code labels functions this way, e.g. @torch.autograd.profiler.record_function("...") in torch/distributed and torchrec), with the other regions labelled by with blocks in train_step
# class: label-decorator
# expect: pass
# why: the label goes with preprocess wherever it is called, so the profile shows the preprocess row around the original bottleneck; the grader must keep the learner's label when it swaps the original preprocess back in (issue 19: it used to report "ran outside every labelled region")
import torch
from torch.profiler import ProfilerActivity, profile, record_function

REGIONS = ("preprocess", "forward", "backward", "optimizer")


@record_function("preprocess")
def preprocess(x):
    mean = x.mean(dim=1, keepdim=True)
    std = x.std(dim=1, keepdim=True)
    return (x - mean) / (std + 1e-5)


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad(set_to_none=True)
    x = preprocess(x)
    with record_function("forward"):
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
    rows = [e for e in prof.key_averages() if e.key in REGIONS]
    return max(rows, key=lambda e: e.cpu_time_total).key
