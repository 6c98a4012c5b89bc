# pattern: the DDP accumulation idiom (PyTorch DDP docs on no_sync; nanoGPT sets model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)): skip the gradient all-reduce on all but a window's last micro-batch via a context helper, falling back to nullcontext for a model that is not wrapped in DDP
# class: correct-ddp-no-sync
# expect: pass
# why: on an unwrapped model the helper is a nullcontext, and the loop is the correct one: divided by the window's real size, scaled backward, one step and update per window, zero_grad after it
import contextlib

import torch


def maybe_no_sync(model, sync):
    if not sync and hasattr(model, "no_sync"):
        return model.no_sync()
    return contextlib.nullcontext()


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    for i, (x, y) in enumerate(micro_batches):
        boundary = (i + 1) % accum_steps == 0 or i + 1 == n
        window = min(accum_steps, n - i // accum_steps * accum_steps)
        with maybe_no_sync(model, sync=boundary):
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y) / window
            scaler.scale(loss).backward()
        if boundary:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
