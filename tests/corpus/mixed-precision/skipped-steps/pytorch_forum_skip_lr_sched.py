# pattern: PyTorch forums, "Optimizer.step() before lr_scheduler.step() error using GradScaler": scale = scaler.get_scale(); scaler.update(); skip_lr_sched = (scale > scaler.get_scale()); if not skip_lr_sched: scheduler.step()
# class: scale-fell-skip-sched
# expect: pass
# why: a fall of the scale across scaler.update() is exactly a skipped step; the scheduler, the EMA and the count all wait for a real one
import torch


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    n_steps = 0
    for inputs, targets in batches:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scale = scaler.get_scale()
        scaler.update()
        skip_lr_sched = (scale > scaler.get_scale())
        if not skip_lr_sched:
            scheduler.step()
            ema.update_parameters(model)
            n_steps += 1
    return n_steps
