# mistake: divides every loss by accum_steps, the short last window's too: its update is 2/3 of the window's mean gradient
# expect-fail: matches-reference
import contextlib


def train(model, optimizer, loss_fn, micro_batches, accum_steps):
    """Accumulate over windows of `accum_steps` micro-batches; `model` is DistributedDataParallel."""
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        ends_window = (i + 1) % accum_steps == 0 or i + 1 == len(micro_batches)
        # Inside no_sync, backward only adds to the local gradients; the window's last backward
        # all-reduces the accumulated sum once.
        with contextlib.nullcontext() if ends_window else model.no_sync():
            loss = loss_fn(model(x), y) / accum_steps
            loss.backward()
        if ends_window:
            optimizer.step()
            optimizer.zero_grad()
