# pattern: karpathy/nanoGPT train.py: `model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)`, the DDP attribute toggle, carried over to a model sharded with fully_shard
# class: ddp-sync-toggle-on-fsdp2
# expect: fail
# expect-fail: syncs-once-per-window
# why: require_backward_grad_sync is DDP's attribute; on an FSDP2 module it is just a new attribute nothing reads, so every backward reduce-scatters (the weights are still right); the message should name set_requires_gradient_sync
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model:
        if isinstance(block, torch.nn.Linear):
            fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    optimizer = make_optimizer(model.parameters())
    it = iter(micro_batches)
    remaining = len(micro_batches)
    while remaining:
        gradient_accumulation_steps = min(accum_steps, remaining)
        for micro_step in range(gradient_accumulation_steps):
            # the official way to do this is with model.no_sync(), but that is a
            # context manager that bloats the code, so we just toggle this variable
            model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)
            X, Y = next(it)
            loss = loss_fn(model(X), Y)
            loss = loss / gradient_accumulation_steps
            loss.backward()
        remaining -= gradient_accumulation_steps
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
