# mistake: clips on rank 0 only (where the norm is logged): clip_grad_norm_ over DTensor gradients all-reduces the norm, so rank 0 waits for a collective rank 1 never makes and times out
# expect-fail: runs
# expect-skip: syncs-once-per-window, matches-reference
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    """Shard `model` with FSDP2 over `mesh`, then accumulate windows of `accum_steps` micro-batches."""
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh, mp_policy=policy)  # one unit per layer: gathered one at a time
    fully_shard(model, mesh=mesh, mp_policy=policy)  # the root: what is left, and the hooks that drive it
    optimizer = make_optimizer(model.parameters())  # after sharding: the parameters are DTensor shards now

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
            if torch.distributed.get_rank() == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            optimizer.zero_grad()
