# mistake: the plain optimizer's step post-hook: with fused=True it fires on every batch, skipped or not
# expect-fail: warmup-on-real-steps, counts-real-steps
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
    """Train on every batch with AMP and a fused AdamW; advance the warm-up on real updates only. Return the
    number of real updates."""
    # Ported from the project's plain AdamW loop, where a step post-hook runs only after a real step.
    updates = 0

    def after_step(opt, args, kwargs):
        nonlocal updates
        scheduler.step()
        updates += 1

    optimizer.register_step_post_hook(after_step)
    for x, y in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    return updates
