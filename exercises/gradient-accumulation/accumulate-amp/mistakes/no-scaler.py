# mistake: accumulates correctly under autocast but skips the GradScaler: backward on the raw loss, optimizer.step() directly
# expect-fail: scaled-backward
# expect-skip: matches-reference-run, step-at-boundaries
# expect-skip: matches-reference-run
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)
        with torch.autocast(device_type='cuda'):
            loss = loss_fn(model(x), y) / window_size
        loss.backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
