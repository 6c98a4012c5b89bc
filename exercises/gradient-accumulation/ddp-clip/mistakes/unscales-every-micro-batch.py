# mistake: unscales and clips after every micro-batch's backward, as in a one-batch AMP step: PyTorch raises at the second unscale_ of the window
# expect-fail: runs
# expect-skip: syncs-once-per-window, unscale-then-clip, steps-through-the-scaler, same-weights-on-both-ranks, matches-reference
import contextlib

import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    """Accumulate over windows of `accum_steps` micro-batches under DDP; clip each window's gradient."""
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)  # the last window may be shorter
        ends_window = i == window_start + window_size - 1
        with contextlib.nullcontext() if ends_window else model.no_sync():
            loss = loss_fn(model(x), y) / window_size
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        if ends_window:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
