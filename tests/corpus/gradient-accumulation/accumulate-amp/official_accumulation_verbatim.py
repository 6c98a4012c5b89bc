# pattern: PyTorch docs, notes/amp_examples "Gradient accumulation", adapted without change: every loss divided by iters_to_accumulate and a step only when (i + 1) % iters_to_accumulate == 0, so a last, shorter window is never stepped on
# class: drops-partial-window
# expect: fail
# expect-fail: loss-divided, step-at-boundaries
# why: with 7 micro-batches and accum_steps=3 the last window (micro-batch 7) has its loss divided by 3 instead of 1 (loss-divided) and no scaler.step after it (step-at-boundaries), so training ends with that window unused (matches-reference-run); the two full windows are right, so matches-large-batch passes
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    iters_to_accumulate = accum_steps
    for i, (input, target) in enumerate(micro_batches):
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            output = model(input)
            loss = loss_fn(output, target)
            loss = loss / iters_to_accumulate

        scaler.scale(loss).backward()

        if (i + 1) % iters_to_accumulate == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
