# pattern: karpathy/nanoGPT train.py: module-level config (dtype, grad_clip=1.0, gradient_accumulation_steps), ctx = torch.amp.autocast(device_type=device_type, dtype=ptdtype), scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16')), micro-step loop with loss / gradient_accumulation_steps, scaler.unscale_ + clip_grad_norm_ when grad_clip != 0, step, update, optimizer.zero_grad(set_to_none=True) at the end
# class: clip-after-unscale
# expect: pass
# why: fp16 autocast, a scaler made once, clipping only after unscale_ (and inactive: the unscaled gradient norm here is ~2e-4, far below 1.0), step and update every iteration, zeroing after the step on a model that starts without gradients
from contextlib import nullcontext

import torch

dtype = 'float16'
grad_clip = 1.0
gradient_accumulation_steps = 1
device_type = 'cuda'
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)


def train(model, optimizer, loss_fn, x, y, steps):
    scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))
    X, Y = x, y
    losses = []
    for iter_num in range(steps):
        for micro_step in range(gradient_accumulation_steps):
            with ctx:
                logits = model(X)
                loss = loss_fn(logits, Y)
                loss = loss / gradient_accumulation_steps  # mean over the micro-steps
            scaler.scale(loss).backward()
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        lossf = loss.item() * gradient_accumulation_steps
        losses.append(lossf)
    return losses
