# pattern: PyTorch profiler docs/tutorial "Using profiler to analyze long-running jobs": torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=2), on_trace_ready=handler) with prof.step() after each iteration, and the regions read from the trace handler's key_averages()
# class: profiler-schedule
# expect: pass
# why: the profiler runs around every step (the first two are wait/warm-up, the last two are recorded), the labelled regions are in the recorded steps and the slowest label among them is returned; the fix is vectorised with torch.std_mean, which uses the same unbiased std
import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

LABELS = ["preprocess", "forward", "backward", "optimizer"]


def preprocess(x):
    std, mean = torch.std_mean(x, dim=1, keepdim=True)
    return (x - mean) / (std + 1e-5)


def train_step(model, optimizer, loss_fn, x, y):
    with record_function("preprocess"):
        x = preprocess(x)
    with record_function("forward"):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
    with record_function("backward"):
        loss.backward()
    with record_function("optimizer"):
        optimizer.step()
    return loss.detach()


def find_bottleneck(model, optimizer, loss_fn, batches):
    results = {}

    def trace_handler(p):
        for event in p.key_averages():
            if event.key in LABELS:
                results[event.key] = results.get(event.key, 0.0) + event.cpu_time_total

    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=trace_handler) as prof:
        for x, y in batches:
            train_step(model, optimizer, loss_fn, x, y)
            prof.step()
    return max(results, key=results.get)
