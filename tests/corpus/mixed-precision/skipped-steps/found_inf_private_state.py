# pattern: code that reads GradScaler's private per-optimizer state after scaler.step (sum(v.item() for v in scaler._found_inf_per_device(optimizer).values()), as in several public training loops and forum answers) to decide whether the step ran, before scaler.update()
# class: found-inf-private
# expect: pass
# why: DEBATABLE, decided pass: a private API that may change, but found_inf is exactly what made scaler.step skip, so the scheduler, the EMA and the count follow the real steps
import torch


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    steps = 0
    for x, y in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        found_inf = sum(v.item() for v in scaler._found_inf_per_device(optimizer).values())
        scaler.update()
        if found_inf:
            continue
        scheduler.step()
        ema.update_parameters(model)
        steps += 1
    return steps
