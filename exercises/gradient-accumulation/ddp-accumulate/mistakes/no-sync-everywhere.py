# mistake: runs every micro-batch inside no_sync, the window's last too: the gradients are never all-reduced and each process steps on its own
# expect-fail: syncs-once-per-window
# expect-skip: matches-reference
import contextlib


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    """Accumulate over windows of `accum_steps` micro-batches; `model` is DistributedDataParallel."""
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        window_size = min(accum_steps, n - (i - i % accum_steps))  # the last window may be shorter
        ends_window = (i + 1) % accum_steps == 0 or i + 1 == n
        # Inside no_sync, backward only adds to the local gradients; the window's last backward
        # all-reduces the accumulated sum once.
        with model.no_sync():
            loss = loss_fn(model(x), y) / window_size
            loss.backward()
        if ends_window:
            optimizer.step()
            optimizer.zero_grad()
