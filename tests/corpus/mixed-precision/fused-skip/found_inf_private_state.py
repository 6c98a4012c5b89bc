# pattern: code that reads GradScaler's private per-optimizer state after scaler.step (sum(v.item() for v in scaler._found_inf_per_device(optimizer).values()), as in several public training loops and forum answers) to decide whether the step ran, before scaler.update()
# class: found-inf-private
# expect: pass
# why: DEBATABLE, decided pass: a private API that may change, but scaler.step fills found_inf for a fused optimizer too (it hands the same flag to the kernel), so the warm-up and the count follow the real updates
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
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
        steps += 1
    return steps
