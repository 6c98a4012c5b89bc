# pattern: facebookresearch/fairseq fairseq/trainer.py train_step: zero_grad at the start, backward on each sample's UNnormalised loss (the criterion's sum), then optimizer.multiply_grads(numer / sample_size) to normalise the summed gradients after the whole window, clip_grad_norm (off with clip_norm=0), optimizer step; with torch.amp: unscale_ first, then multiply, then scaler.step and scaler.update
# class: normalize-after-window
# expect: pass
# why: DEBATABLE, decided pass: the losses are not divided before backward, but the summed window gradient is multiplied by 1/window_size after unscale_ and before the step, so every update uses exactly the window's mean gradient (fp32 gradient buffers, so the order of the division does not matter) and an inf still makes scaler.step skip; the exercise's goal ("every update uses the mean gradient of the samples in its window") is met and matches-large-batch verifies it from outside; loss-divided should accept a normalisation of the gradients between the window's last backward and the step, or say so in docs/course.md
import torch


def multiply_grads(optimizer, c):
    """Scale every gradient the optimizer holds by c (fairseq's optimizer.multiply_grads)."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                p.grad.data.mul_(c)


def train_step(model, optimizer, scaler, criterion, samples, clip_norm=0.0):
    optimizer.zero_grad()
    sample_size = 0
    for sample in samples:
        x, y = sample
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        sample_size += 1
    scaler.unscale_(optimizer)
    numer = 1.0  # data-parallel world size
    multiply_grads(optimizer, numer / (sample_size or 1.0))
    if clip_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    scaler.step(optimizer)
    scaler.update()


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    update_freq = accum_steps
    for start in range(0, len(micro_batches), update_freq):
        train_step(model, optimizer, scaler, loss_fn, micro_batches[start:start + update_freq])
