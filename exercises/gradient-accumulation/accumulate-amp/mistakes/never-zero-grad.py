# mistake: never clears the gradients; in an ordinary run the scaler's in-place unscale shrinks the stale ones 65536-fold and hides them, but after an overflowing window their inf makes the scaler skip every later step
# expect-fail: grads-cleared-per-window
# expect-skip: matches-reference-run
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)
        with torch.autocast(device_type='cuda'):
            loss = loss_fn(model(x), y) / window_size
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            scaler.step(optimizer)
            scaler.update()
