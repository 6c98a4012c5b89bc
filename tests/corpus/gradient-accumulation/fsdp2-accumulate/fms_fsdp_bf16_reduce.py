# pattern: foundation-model-stack/fms-fsdp fms_fsdp/policies/mixed_precision.py: bfSixteen = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
# class: bf16-reduce
# expect: fail
# expect-fail: mixed-precision, matches-reference
# why: gradients are reduce-scattered (and accumulated between syncs) in bfloat16, whose 8 bits of mantissa round the sum over the ranks; the message should name reduce_dtype=torch.float32
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

bfSixteen = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh, mp_policy=bfSixteen)
    fully_shard(model, mesh=mesh, mp_policy=bfSixteen)
    optimizer = make_optimizer(model.parameters())
    n = len(micro_batches)
    for i, (x, y) in enumerate(micro_batches):
        start = i - i % accum_steps
        size = min(accum_steps, n - start)
        last = i == start + size - 1
        model.set_requires_gradient_sync(last)
        (loss_fn(model(x), y) / size).backward()
        if last:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            optimizer.zero_grad()
