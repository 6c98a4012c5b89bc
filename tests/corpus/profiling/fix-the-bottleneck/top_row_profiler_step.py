# pattern: the PyTorch profiler tutorial's long-running-job setup (torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=2)) with prof.step() after each iteration), then taking the top row of prof.key_averages() sorted by cpu_time_total as the answer: with a schedule the profiler adds a "ProfilerStep*" region around each step, and it tops the table
# class: top-row-enclosing
# expect: fail
# expect-fail: names-bottleneck
# why: the profiling and the fix are right, but the top row is the profiler's own ProfilerStep* region, which encloses the whole step, not the labelled region where the time goes (preprocess); the message should say that ProfilerStep* is the profiler's per-step wrapper and name the innermost region
import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule


def preprocess(x):
    return (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)


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
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2)) as prof:
        for x, y in batches:
            train_step(model, optimizer, loss_fn, x, y)
            prof.step()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))
    rows = sorted(prof.key_averages(), key=lambda e: e.cpu_time_total, reverse=True)
    return rows[0].key
