# pattern: pytorch/examples distributed/FSDP2/example.py (--mixed-precision): fully_shard each block with MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32), then the root, optimizer built afterwards; accumulation with set_requires_gradient_sync as in pytorch/pytorch test/distributed/_composable/fsdp test_fully_shard_training.py
# class: fsdp2-correct
# expect: pass
# why: each layer its own unit, the root last, the policy on every call, the optimizer over the DTensor parameters, one reduce-scatter per window and clip_grad_norm_ over the DTensor gradients: the global norm
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    fsdp_kwargs = {"mesh": mesh, "mp_policy": MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                                   reduce_dtype=torch.float32)}
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            fully_shard(module, **fsdp_kwargs)
    fully_shard(model, **fsdp_kwargs)
    optim = make_optimizer(model.parameters())

    windows = [micro_batches[i:i + accum_steps] for i in range(0, len(micro_batches), accum_steps)]
    for window in windows:
        for idx, (inp, target) in enumerate(window):
            is_last_microbatch = idx == len(window) - 1
            model.set_requires_gradient_sync(is_last_microbatch)
            loss = loss_fn(model(inp), target) / len(window)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
        optim.step()
        optim.zero_grad()
