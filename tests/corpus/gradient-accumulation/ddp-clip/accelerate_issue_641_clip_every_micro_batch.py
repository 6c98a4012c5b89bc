# pattern: huggingface/accelerate issue #641 "Gradient accumulation doesn't work with Accelerate's clip_grad_norm_": inside accelerator.accumulate(model) the loop calls accelerator.clip_grad_norm_ (scaler.unscale_ + clip) after every backward, not only when accelerator.sync_gradients
# class: unscale-every-micro-batch
# expect: fail
# expect-fail: runs
# why: the second micro-batch's unscale_ raises "unscale_() has already been called on this optimizer since the last update()"; the message should say a window is one optimizer step and unscale_ belongs after its last backward
import contextlib

import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    n = len(micro_batches)
    for step, (x, y) in enumerate(micro_batches):
        sync_gradients = (step + 1) % accum_steps == 0 or step + 1 == n
        window = min(accum_steps, n - (step - step % accum_steps))
        with contextlib.nullcontext() if sync_gradients else model.no_sync():
            loss = loss_fn(model(x), y) / window
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)  # accelerator.clip_grad_norm_
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        if sync_gradients:  # the AcceleratedOptimizer only steps when gradients are synced
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
