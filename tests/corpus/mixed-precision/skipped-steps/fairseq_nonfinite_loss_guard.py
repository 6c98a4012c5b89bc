# pattern: facebookresearch/fairseq-style guard (trainer.train_step: skip the update and do not advance num_updates when the loss or the gradient norm is not finite), applied to the loss only, with the recipe's scaler calls: if not math.isfinite(loss.item()): continue
# class: nonfinite-loss-guard
# expect: fail
# expect-fail: scheduler-on-real-steps, counts-real-steps
# why: every loss here is finite (the outlier batches' about 200), while the calibration's and the outliers' scaled gradients overflow; the guard never fires, so the scheduler and the count advance on skipped steps; the message should name a skipped batch
import math

import torch


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    num_updates = 0
    for sample, target in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(model(sample), target)
        if not math.isfinite(loss.item()):
            continue
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        num_updates += 1
        scheduler.step()
        ema.update_parameters(model)
    return num_updates
