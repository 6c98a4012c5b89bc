# pattern: the change proposed in karpathy/nanoGPT#605 "gradient accumulation": loss = loss / (micro_step + 1) "since we've accumulated (micro_step+1) gradients at a given iteration" instead of loss / gradient_accumulation_steps
# class: wrong-divisor
# expect: fail
# expect-fail: loss-divided
# why: in a window of 3 the micro-batches' losses are divided by 1, 2 and 3, so the window's gradient is a weighted sum (1 + 1/2 + 1/3 of a mean), not the mean; the last window of 1 happens to be right; the message must name micro-batch 1 or 2 of a full window and its divisor
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    batches = iter(micro_batches)
    remaining = len(micro_batches)
    while remaining > 0:
        steps = min(accum_steps, remaining)
        for micro_step in range(steps):
            X, Y = next(batches)
            with torch.amp.autocast(device_type='cuda', dtype=torch.float16):
                loss = loss_fn(model(X), Y)
                loss = loss / (micro_step + 1)
            scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        remaining -= steps
