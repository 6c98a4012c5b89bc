# mistake: an accelerate-style wrapper of optimizer.step() that flags a real step; GradScaler calls a fused optimizer's step() on skipped steps too
# expect-fail: warmup-on-real-steps, counts-real-steps
import torch


def train(model, optimizer, scheduler, scaler, loss_fn, batches):
    """Train on every batch with AMP and a fused AdamW; advance the warm-up on real updates only. Return the
    number of real updates."""
    stepped = [False]
    inner_step = optimizer.step

    def step(*args, **kwargs):
        stepped[0] = True
        return inner_step(*args, **kwargs)

    optimizer.step = step
    updates = 0
    for x, y in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type='cuda', dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        stepped[0] = False
        scaler.step(optimizer)
        scaler.update()
        if stepped[0]:
            scheduler.step()
            updates += 1
    return updates
