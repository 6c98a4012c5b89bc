# mistake: backpropagates each micro-batch's full loss, so a window's gradient is the sum, not the mean
# expect-fail: loss-divided
# expect-skip: matches-large-batch, matches-reference-run
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        with torch.autocast(device_type='cuda'):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
