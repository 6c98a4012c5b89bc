# pattern: torch.optim.swa_utils.AveragedModel with get_ema_multi_avg_fn (PyTorch docs, "Weight averaging (SWA and EMA)"), its update_parameters driven by an optimizer step post hook (Optimizer.register_step_post_hook), which runs only when the optimizer really steps
# class: step-hook-counter
# expect: pass
# why: the hook fires inside scaler.step only when it calls the optimizer's step, so the count, the scheduler and the EMA follow real steps; skipped steps never reach it
import torch


def train(model, optimizer, scheduler, ema, scaler, loss_fn, batches):
    real_steps = []
    handle = optimizer.register_step_post_hook(lambda opt, args, kwargs: real_steps.append(1))
    try:
        for x, y in batches:
            optimizer.zero_grad()
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            before = len(real_steps)
            scaler.step(optimizer)
            scaler.update()
            if len(real_steps) > before:
                ema.update_parameters(model)
                scheduler.step()
    finally:
        handle.remove()
    return len(real_steps)
