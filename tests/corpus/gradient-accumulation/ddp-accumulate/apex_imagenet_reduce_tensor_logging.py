# pattern: NVIDIA/apex examples/imagenet/main_amp.py reduce_tensor (rt = tensor.clone(); dist.all_reduce(rt, op=dist.ReduceOp.SUM); rt /= args.world_size) on the detached loss, for logging, after each backward; the accumulation itself as the PyTorch DDP no_sync docs show it
# class: logging-all-reduce
# expect: pass
# why: the accumulation is correct (no_sync on every micro-batch but the window's last, each loss divided by its window's size); the extra all-reduce of the loss only reports the mean loss, and the grader's process must answer it instead of pairing it with a gradient all-reduce
import contextlib

import torch.distributed as dist


def reduce_tensor(tensor):
    rt = tensor.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    rt /= dist.get_world_size()
    return rt


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)
        ends_window = i == window_start + window_size - 1
        with contextlib.nullcontext() if ends_window else model.no_sync():
            loss = loss_fn(model(x), y) / window_size
            loss.backward()
        reduced_loss = reduce_tensor(loss.detach())
        if dist.get_rank() == 0:
            print(f"micro-batch {i}: loss {reduced_loss.item():.4f}")
        if ends_window:
            optimizer.step()
            optimizer.zero_grad()
