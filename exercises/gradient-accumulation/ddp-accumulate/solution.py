import contextlib


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    """Accumulate over windows of `accum_steps` micro-batches; `model` is DistributedDataParallel."""
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)  # the last window may be shorter
        ends_window = i == window_start + window_size - 1
        # Inside no_sync, backward only adds to the local gradients; the window's last backward
        # all-reduces the accumulated sum once.
        with contextlib.nullcontext() if ends_window else model.no_sync():
            loss = loss_fn(model(x), y) / window_size
            loss.backward()
        if ends_window:
            optimizer.step()
            optimizer.zero_grad()
