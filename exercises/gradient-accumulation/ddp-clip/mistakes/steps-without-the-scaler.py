# mistake: unscales, clips and then calls optimizer.step() directly, bypassing scaler.step: the window whose gradient overflowed is not skipped and the weights turn non-finite
# expect-fail: steps-through-the-scaler, same-weights-on-both-ranks
# expect-skip: matches-reference
import contextlib

import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)
        ends_window = i == window_start + window_size - 1
        with contextlib.nullcontext() if ends_window else model.no_sync():
            loss = loss_fn(model(x), y) / window_size
            scaler.scale(loss).backward()
        if ends_window:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            scaler.update()
            optimizer.zero_grad()
