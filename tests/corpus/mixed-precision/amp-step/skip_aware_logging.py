# pattern: the workaround from the PyTorch forum thread "optimizer.step() before lr_scheduler.step() error using GradScaler" (cited in hkchengrex/STCN#44): read scaler.get_scale() before and after update() to know whether scaler.step skipped the optimizer step, and return loss.item()
# class: correct-skip-detection
# expect: pass
# why: the documented step plus bookkeeping that only reads the scale; returning loss.item() (a float) is allowed
import torch

skipped_steps = 0


def train_step(model, optimizer, scaler, loss_fn, x, y):
    global skipped_steps
    optimizer.zero_grad()
    with torch.autocast(device_type='cuda', dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scale_before = scaler.get_scale()
    scaler.step(optimizer)
    scaler.update()
    if scaler.get_scale() < scale_before:  # the step was skipped: inf/NaN gradients
        skipped_steps += 1
    return loss.item()
