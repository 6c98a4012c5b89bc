# mistake: clips the gradients before scaler.unscale_(optimizer), while they are still multiplied by the scale, so every update shrinks to a sliver
# expect-fail: matches-large-batch
# expect-skip: matches-reference-run
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
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # still scaled: clipped far too hard
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
