# pattern: timing each part of the step with time.perf_counter() into a dict and taking the largest (the "manual timers" style of many training scripts, e.g. nanoGPT's train.py `t0 = time.time()` / `dt = t1 - t0` per iteration, taken per region), with the profiler still run around the steps as the exercise asks
# class: clock-instead-of-profile
# expect: fail
# expect-fail: names-bottleneck
# why: DEBATABLE, decided fail: the regions' wall-clock totals name the same region the profiler's cpu_time_total does on these steps, and the profiler did run with labelled regions, but the exercise is to read the answer from the profile and this code never reads it (neither key_averages() nor events()); the message should say the region is right and the answer must come from the profiler's table
import time
from collections import defaultdict
from contextlib import contextmanager

import torch
from torch.profiler import ProfilerActivity, profile, record_function

TIMES = defaultdict(float)


@contextmanager
def region(name):
    start = time.perf_counter()
    with record_function(name):
        yield
    TIMES[name] += time.perf_counter() - start


def preprocess(x):
    return (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)


def train_step(model, optimizer, loss_fn, x, y):
    with region("preprocess"):
        x = preprocess(x)
    optimizer.zero_grad()
    with region("forward"):
        loss = loss_fn(model(x), y)
    with region("backward"):
        loss.backward()
    with region("optimizer"):
        optimizer.step()
    return loss.detach()


def find_bottleneck(model, optimizer, loss_fn, batches):
    TIMES.clear()
    with profile(activities=[ProfilerActivity.CPU]):
        for x, y in batches:
            train_step(model, optimizer, loss_fn, x, y)
    return max(TIMES, key=TIMES.get)
