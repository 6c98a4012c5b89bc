# mistake: runs the forward pass under autocast but computes the loss after the block
# expect-fail: autocast-scope
# expect-skip: matches-reference-run
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps):
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_size = min(accum_steps, n - (i - i % accum_steps))
        with torch.autocast(device_type='cuda'):
            out = model(x)
        loss = loss_fn(out, y) / window_size
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == n:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
