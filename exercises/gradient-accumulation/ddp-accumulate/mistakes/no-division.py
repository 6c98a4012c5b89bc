# mistake: forgets to divide the loss by its window's size: each update is the window's summed gradient, two or three times too large
# expect-fail: matches-reference
import contextlib


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    """Accumulate over windows of `accum_steps` micro-batches; `model` is DistributedDataParallel."""
    n = len(micro_batches)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        ends_window = (i + 1) % accum_steps == 0 or i + 1 == n
        # Inside no_sync, backward only adds to the local gradients; the window's last backward
        # all-reduces the accumulated sum once.
        with contextlib.nullcontext() if ends_window else model.no_sync():
            loss = loss_fn(model(x), y)
            loss.backward()
        if ends_window:
            optimizer.step()
            optimizer.zero_grad()
