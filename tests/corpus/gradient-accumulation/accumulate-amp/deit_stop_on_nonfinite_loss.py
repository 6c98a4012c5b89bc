# pattern: facebookresearch/deit engine.py and mae engine_finetune.py train_one_epoch: loss_value = loss.item(); if not math.isfinite(loss_value): print("Loss is {}, stopping training".format(loss_value)); sys.exit(1), with the window's length computed for a short last window
# class: stop-on-nonfinite-loss
# expect: pass
# why: an fp16 overflow shows in the scaled gradients, not in the loss, so the guard never fires; every loss is divided by its window's size, scaled, and each window steps and updates once (the overflowing first window skipped by scaler.step)
import math
import sys

import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    optimizer.zero_grad()
    for data_iter_step, (samples, targets) in enumerate(micro_batches):
        window_start = data_iter_step - data_iter_step % accum_steps
        accum_iter = min(accum_steps, len(micro_batches) - window_start)
        with torch.cuda.amp.autocast():
            outputs = model(samples)
            loss = loss_fn(outputs, targets)

        loss_value = loss.item()
        if not math.isfinite(loss_value):
            print("Loss is {}, stopping training".format(loss_value))
            sys.exit(1)

        scaler.scale(loss / accum_iter).backward()
        if data_iter_step + 1 == window_start + accum_iter:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
