# pattern: a single fully_shard(model) on the whole model, as in the FSDP2 docs' minimal example (pytorch/pytorch torch/distributed/fsdp/_fully_shard/_fully_shard.py docstring) without the per-block calls that pytorch/torchtitan's parallelize (apply_fsdp) makes for each transformer block
# class: root-only-unit
# expect: fail
# expect-fail: shards-each-layer
# why: one unit means every weight is all-gathered at once before the forward, so the whole model is unsharded in memory for the whole pass; the weights are right, the message should name fully_shard on each Linear first
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    fully_shard(model, mesh=mesh,
                mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32))
    optimizer = make_optimizer(model.parameters())
    n = len(micro_batches)
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)
        ends_window = i == window_start + window_size - 1
        model.set_requires_gradient_sync(ends_window)
        (loss_fn(model(x), y) / window_size).backward()
        if ends_window:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            optimizer.zero_grad()
