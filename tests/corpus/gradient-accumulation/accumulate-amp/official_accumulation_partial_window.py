# pattern: PyTorch docs, notes/amp_examples "Gradient accumulation": loss = loss / iters_to_accumulate inside autocast, scaler.scale(loss).backward() every iteration, and scaler.step, scaler.update, optimizer.zero_grad() when (i + 1) % iters_to_accumulate == 0; extended here, as the exercise asks, to step on and divide by the last, shorter window
# class: correct-official
# expect: pass
# why: the documented accumulation loop with the window's real size as divisor and a step after the last micro-batch
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    iters_to_accumulate = accum_steps
    n = len(micro_batches)
    for i, (input, target) in enumerate(micro_batches):
        window = min(iters_to_accumulate, n - i // iters_to_accumulate * iters_to_accumulate)
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            output = model(input)
            loss = loss_fn(output, target)
            loss = loss / window

        # scaled gradients add up across the window
        scaler.scale(loss).backward()

        if (i + 1) % iters_to_accumulate == 0 or i + 1 == n:
            # (an unscale_ would go here if the window's gradients were to be clipped)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
