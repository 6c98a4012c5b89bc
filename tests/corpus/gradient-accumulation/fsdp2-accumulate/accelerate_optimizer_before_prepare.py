# pattern: the optimizer created before the model is sharded (huggingface/accelerate docs, "FSDP": the model must be prepared before the optimizer is created, because sharding replaces the parameters; accelerate issues about FSDP optimizers that do not train)
# class: optimizer-before-sharding
# expect: fail
# expect-fail: optimizer-after-sharding
# why: fully_shard replaces every parameter with a DTensor, so the optimizer holds the old tensors, no backward fills them and the model's weights never move; matches-reference is skipped after it, its message says why
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    optimizer = make_optimizer(model.parameters())
    mixed_precision = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for submodule in model.children():
        if any(p.requires_grad for p in submodule.parameters(recurse=False)):
            fully_shard(submodule, mesh=mesh, mp_policy=mixed_precision)
    fully_shard(model, mesh=mesh, mp_policy=mixed_precision)
    n = len(micro_batches)
    for step, (inputs, labels) in enumerate(micro_batches):
        first = step - step % accum_steps
        k = min(accum_steps, n - first)
        sync_gradients = step == first + k - 1
        model.set_requires_gradient_sync(sync_gradients)
        loss = loss_fn(model(inputs), labels) / k
        loss.backward()
        if sync_gradients:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            optimizer.zero_grad()
