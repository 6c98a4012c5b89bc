# pattern: pytorch/torchtune recipes/full_finetune_distributed.py: fully_shard per layer, every micro-batch's backward under FSDP2 with gradient sync left on, `grad_norm = torch.nn.utils.clip_grad_norm_(...)` then `.full_tensor()` for logging, step once per gradient_accumulation_steps
# class: sync-every-micro-batch
# expect: fail
# expect-fail: syncs-once-per-window
# why: every backward reduce-scatters (5 per layer where 3 would do): the sum of sums is the same, so the weights match, but each extra reduce-scatter is communication the window did not need; the message should name set_requires_gradient_sync(False)
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    for m in reversed(list(model.modules())):
        if isinstance(m, torch.nn.Linear):
            fully_shard(m, mesh=mesh, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                                     reduce_dtype=torch.float32))
    fully_shard(model, mesh=mesh, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                                 reduce_dtype=torch.float32))
    optimizer = make_optimizer(model.parameters())
    n = len(micro_batches)
    for idx, (tokens, labels) in enumerate(micro_batches):
        first = idx - idx % accum_steps
        gradient_accumulation_steps = min(accum_steps, n - first)
        current_loss = loss_fn(model(tokens), labels) / gradient_accumulation_steps
        current_loss.backward()
        if (idx + 1 - first) == gradient_accumulation_steps:
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=float(max_norm))
            if isinstance(grad_norm, torch.distributed.tensor.DTensor):
                grad_norm = grad_norm.full_tensor()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
