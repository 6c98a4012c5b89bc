# pattern: `is_last = micro_step == args.gradient_accumulation_steps - 1; model.set_requires_gradient_sync(is_last)` with the loss divided by the fixed accumulation count (the FSDP2 loop of public LLM trainers, found by a GitHub code search for set_requires_gradient_sync(is_last)), applied to a last window that is shorter
# class: partial-window-divisor
# expect: fail
# expect-fail: matches-reference
# why: the short last window's loss is divided by accum_steps instead of its own size, and its gradient is under max_norm, so no clip hides the halved gradient; the message should name the short last window
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for m in model:
        if isinstance(m, torch.nn.Linear):
            fully_shard(m, mesh=mesh, mp_policy=mp_policy)
    fully_shard(model, mesh=mesh, mp_policy=mp_policy)
    opt = make_optimizer(model.parameters())
    for start in range(0, len(micro_batches), accum_steps):
        chunk = micro_batches[start:start + accum_steps]
        for micro_step, (x, y) in enumerate(chunk):
            is_last = micro_step == len(chunk) - 1
            model.set_requires_gradient_sync(is_last)
            (loss_fn(model(x), y) / accum_steps).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        opt.step()
        opt.zero_grad()
