# pattern: PyTorch forums, "Optimizer.step() before lr_scheduler.step() error using GradScaler" (scale = scaler.get_scale(); scaler.update(); skip_lr_sched = (scale > scaler.get_scale())), here with a fused AdamW
# class: scale-fell-skip-sched
# expect: pass
# why: the scale falls across scaler.update() exactly when the gradients held inf or NaN, whether the plain optimizer was not called or the fused kernel skipped; the warm-up and the count follow the real updates
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
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
            n_steps += 1
    return n_steps
