# mistake: multiplies the learning rate by accum_steps (the linear scaling rule for a larger batch), though each update already uses the window's mean gradient: updates 3x too large
# expect-fail: matches-reference-run
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    """Accumulate gradients over windows of `accum_steps` micro-batches, in mixed precision."""
    n = len(micro_batches)
    for group in optimizer.param_groups:
        group["lr"] *= accum_steps  # "linear scaling": but each window's gradient is already the mean
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)  # the last window may be shorter
        with torch.autocast(device_type='cuda'):
            loss = loss_fn(model(x), y) / window_size
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
