# mistake: "fixes" the error of unscaling every micro-batch with a scaler.update() after each: the window's earlier micro-batches are divided by the scale again and again, and scaler.step unscales the last one's twice
# expect-fail: unscale-then-clip, steps-through-the-scaler, same-weights-on-both-ranks
# expect-skip: matches-reference
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
        scaler.update()  # "unscale_() has already been called on this optimizer since the last update()"
        if ends_window:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
