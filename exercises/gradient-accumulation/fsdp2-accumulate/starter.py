import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    """Shard `model` with FSDP2 over `mesh`, then accumulate windows of `accum_steps` micro-batches."""
    # TODO: make each nn.Linear its own FSDP unit, then the whole model, with a MixedPrecisionPolicy
    #       that computes in bfloat16 and reduces in float32
    optimizer = make_optimizer(model.parameters())  # TODO: is this the right place to build it?

    n = len(micro_batches)
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)  # the last window may be shorter
        ends_window = i == window_start + window_size - 1
        # TODO: only the window's last backward should reduce-scatter the gradients
        loss = loss_fn(model(x), y) / window_size
        loss.backward()
        if ends_window:
            # TODO: clip the window's gradient to max_norm, at its norm over both processes
            optimizer.step()
            optimizer.zero_grad()
