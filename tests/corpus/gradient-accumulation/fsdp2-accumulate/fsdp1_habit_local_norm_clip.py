# pattern: a hand-written clip over the local shards (the FSDP1 docs warn that torch.nn.utils.clip_grad_norm_ on FullyShardedDataParallel's flat shards gives each rank its own norm; pytorch/pytorch torch/distributed/fsdp/fully_sharded_data_parallel.py clip_grad_norm_), written here with DTensor.to_local()
# class: clip-local-shard-norm
# expect: fail
# expect-fail: matches-reference
# why: each rank's norm covers only its own rows, so the two halves of one gradient are scaled by different factors; the message should say that clip_grad_norm_ over the DTensor gradients computes the norm over both processes
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def _clip_local(parameters, max_norm):
    grads = [p.grad.to_local() for p in parameters if p.grad is not None]
    total_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    clip_coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(clip_coef)


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    optimizer = make_optimizer(model.parameters())
    n = len(micro_batches)
    for i, (x, y) in enumerate(micro_batches):
        window_start = i - i % accum_steps
        window_size = min(accum_steps, n - window_start)
        sync = i == window_start + window_size - 1
        model.set_requires_gradient_sync(sync)
        (loss_fn(model(x), y) / window_size).backward()
        if sync:
            _clip_local(list(model.parameters()), max_norm)
            optimizer.step()
            optimizer.zero_grad()
