# pattern: karpathy/nanoGPT train.py inner loop: for micro_step in range(gradient_accumulation_steps): with ctx: loss = loss / gradient_accumulation_steps; scaler.scale(loss).backward(); then if grad_clip != 0.0: scaler.unscale_(optimizer); clip_grad_norm_; scaler.step; scaler.update; optimizer.zero_grad(set_to_none=True); the number of micro-steps is the window's real size here (nanoGPT never has a short window)
# class: clip-after-unscale
# expect: pass
# why: per window: losses divided by the window's size inside autocast, scaled backward, unscale_ then clipping, one step and update, gradients cleared after the step; grad_clip is 5.0 here (nanoGPT's default is 1.0, which this task's window gradients exceed in a few seeds: max 1.13 over 430 seeds) so clipping never changes an update
from contextlib import nullcontext

import torch

grad_clip = 5.0
device_type = 'cuda'
ptdtype = torch.float16
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    batches = iter(micro_batches)
    remaining = len(micro_batches)
    while remaining > 0:
        gradient_accumulation_steps = min(accum_steps, remaining)
        for micro_step in range(gradient_accumulation_steps):
            X, Y = next(batches)
            with ctx:
                logits = model(X)
                loss = loss_fn(logits, Y)
                loss = loss / gradient_accumulation_steps  # mean over the window's micro-steps
            scaler.scale(loss).backward()
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        remaining -= gradient_accumulation_steps
