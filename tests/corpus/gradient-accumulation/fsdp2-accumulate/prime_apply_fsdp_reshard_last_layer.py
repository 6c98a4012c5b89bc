# pattern: PrimeIntellect-ai/prime zeroband/train.py apply_fsdp: MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32), fully_shard per transformer block with reshard_after_forward False for the last block, then the root
# class: fsdp2-correct
# expect: pass
# why: reshard_after_forward only decides whether a unit's gathered weights are freed after forward (memory against one more all-gather); the units, the policy, the sync per window and the global clip are all correct
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def apply_fsdp(model, mesh, reshard_after_forward=True):
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    layers = [m for m in model if isinstance(m, torch.nn.Linear)]
    for layer_id, block in enumerate(layers):
        layer_reshard_after_forward = reshard_after_forward and layer_id < len(layers) - 1
        fully_shard(block, mesh=mesh, mp_policy=mp_policy, reshard_after_forward=layer_reshard_after_forward)
    fully_shard(model, mesh=mesh, mp_policy=mp_policy, reshard_after_forward=reshard_after_forward)


def train(model, mesh, make_optimizer, loss_fn, micro_batches, accum_steps, max_norm):
    apply_fsdp(model, mesh)
    inner_optimizer = make_optimizer(model.parameters())
    num_micro = len(micro_batches)
    for start in range(0, num_micro, accum_steps):
        grad_acc_steps = min(accum_steps, num_micro - start)
        for grad_acc_step in range(grad_acc_steps):
            is_accumulating = grad_acc_step < grad_acc_steps - 1
            model.set_requires_gradient_sync(not is_accumulating)
            batch, labels = micro_batches[start + grad_acc_step]
            loss = loss_fn(model(batch), labels) / grad_acc_steps
            loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        grad_norm = grad_norm.full_tensor()  # the logged value, the same on every rank
        inner_optimizer.step()
        inner_optimizer.zero_grad()
