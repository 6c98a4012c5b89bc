# mistake: the window test is off by one (`i % accum_steps == 0`): it steps and clears after micro-batches 1, 4 and 7, the first of each window, not the last
# expect-fail: step-at-boundaries
# expect-skip: grads-cleared-per-window, matches-large-batch, matches-reference-run
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    """Accumulate gradients over windows of `accum_steps` micro-batches, in mixed precision."""
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)
        with torch.autocast(device_type='cuda'):
            loss = loss_fn(model(x), y) / window_size
        scaler.scale(loss).backward()
        if i % accum_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
