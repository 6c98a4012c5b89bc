# pattern: an optimizer step post hook counting real steps (Optimizer.register_step_post_hook, as PyTorch's "Weight averaging (SWA and EMA)" docs drive update_parameters), carried over from a plain optimizer to AdamW(fused=True)
# class: step-hook-counter
# expect: fail
# expect-fail: warmup-on-real-steps, counts-real-steps
# why: with a fused optimizer GradScaler calls step() on every batch and the kernel skips internally, so the hook fires on skipped updates too; the count is the batch count and the warm-up runs ahead
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
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
                scheduler.step()
    finally:
        handle.remove()
    return len(real_steps)
