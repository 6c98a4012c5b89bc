# pattern: PyTorch docs, notes/amp_examples "Gradient accumulation" (scaler.step/update only when (i + 1) % iters_to_accumulate == 0) combined with "Working with Unscaled Gradients" (scaler.unscale_(optimizer) then clip_grad_norm_ before scaler.step), under DDP's no_sync for the micro-batches that do not end a window
# class: unscale-once-per-window
# expect: pass
# why: the docs' accumulation loop with the docs' clipping block moved inside the step branch: one unscale_ per window after its last (syncing) backward, clipping of the all-reduced gradient, each loss divided by its window's size
import contextlib

import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    n = len(micro_batches)
    for i, (input, target) in enumerate(micro_batches):
        start = i - i % accum_steps
        iters_to_accumulate = min(accum_steps, n - start)
        boundary = (i + 1) % accum_steps == 0 or i + 1 == n
        with contextlib.nullcontext() if boundary else model.no_sync():
            output = model(input)
            loss = loss_fn(output, target)
            loss = loss / iters_to_accumulate
            # Accumulates scaled gradients.
            scaler.scale(loss).backward()
        if boundary:
            # Unscales the gradients of optimizer's assigned params in-place
            scaler.unscale_(optimizer)
            # Since the gradients of optimizer's assigned params are unscaled, clips as usual:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
