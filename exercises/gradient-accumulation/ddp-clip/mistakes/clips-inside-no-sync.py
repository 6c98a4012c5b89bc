# mistake: unscales and clips inside the no_sync block, before the window's last backward: it clips this process's own partial sum, and the last backward adds scaled gradients on top
# expect-fail: unscale-then-clip, steps-through-the-scaler, same-weights-on-both-ranks
# expect-skip: matches-reference
import torch


def train(model, optimizer, scaler, loss_fn, micro_batches, accum_steps, max_norm):
    """Accumulate over windows of `accum_steps` micro-batches under DDP; clip each window's gradient."""
    optimizer.zero_grad()
    for start in range(0, len(micro_batches), accum_steps):
        window = micro_batches[start:start + accum_steps]
        with model.no_sync():  # no all-reduce for all micro-batches but the last
            for x, y in window[:-1]:
                scaler.scale(loss_fn(model(x), y) / len(window)).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        x, y = window[-1]
        scaler.scale(loss_fn(model(x), y) / len(window)).backward()  # all-reduces the window's sum
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
