# pattern: microsoft/Swin-Transformer main_simmim_pt.py train_one_epoch with ACCUMULATION_STEPS > 1 (issue #311 "AMP + Accumulation-steps Fails"): loss divided by the steps, scaler.scale(loss).backward(), then "if config.TRAIN.CLIP_GRAD: scaler.unscale_(optimizer); grad_norm = clip_grad_norm_(...)" on every iteration, scaler.step/zero_grad/update only when (idx + 1) % ACCUMULATION_STEPS == 0
# class: unscale-every-micro-batch
# expect: fail
# expect-fail: runs
# why: PyTorch raises at the window's second unscale_ (the traceback in the issue); the grader reports it as runs with the window-is-one-step explanation
import contextlib

import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    optimizer.zero_grad()
    num_steps = len(micro_batches)
    for idx, (img, target) in enumerate(micro_batches):
        last = (idx + 1) % accum_steps == 0 or idx + 1 == num_steps
        window = min(accum_steps, num_steps - (idx - idx % accum_steps))
        with contextlib.nullcontext() if last else model.no_sync():
            loss = loss_fn(model(img), target)
            loss = loss / window
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)  # noqa: F841
        if last:
            scaler.step(optimizer)
            optimizer.zero_grad()
            scaler.update()
