# mistake: builds the optimizer before fully_shard: it holds the plain tensors that sharding replaced, so its steps change nothing the model uses
# expect-fail: optimizer-after-sharding
# expect-skip: matches-reference
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    """Shard `model` with FSDP2 over `mesh`, then accumulate windows of `accum_steps` micro-batches."""
    optimizer = make_optimizer(model.parameters())
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh, mp_policy=policy)  # one unit per layer: gathered one at a time
    fully_shard(model, mesh=mesh, mp_policy=policy)  # the root: what is left, and the hooks that drive it

    n = len(micro_batches)
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)  # the last window may be shorter
        ends_window = i == window_start + window_size - 1
        # Only the window's last backward reduce-scatters; the others add to the unsharded gradients.
        model.set_requires_gradient_sync(ends_window)
        loss = loss_fn(model(x), y) / window_size
        loss.backward()
        if ends_window:
            # The sharded gradients are DTensors: clip_grad_norm_ computes the norm over both ranks' shards.
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            optimizer.zero_grad()
