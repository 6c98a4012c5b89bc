import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    """Accumulate gradients over windows of `accum_steps` micro-batches, in mixed precision."""
    n = len(micro_batches)
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
