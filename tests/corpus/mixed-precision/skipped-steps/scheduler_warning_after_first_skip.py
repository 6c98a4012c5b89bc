# pattern: pytorch/pytorch issues and forum threads on "Detected call of `lr_scheduler.step()` before `optimizer.step()`" with AMP: the recipe's loop (scaler.step, scaler.update, then scheduler.step() every iteration) warns because GradScaler skipped the very first optimizer.step
# class: scheduler-every-iteration
# expect: fail
# expect-fail: scheduler-on-real-steps, counts-real-steps
# why: the warning is the symptom: the first steps were skipped while the scale calibrated and the scheduler moved on anyway; the message should name batch 1, skipped, and the scheduler.step() line
import torch


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    iters = 0
    for data, target in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            output = model(data)
            loss = loss_fn(output, target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        ema.update_parameters(model)
        iters += 1
    return iters
