# pattern: pytorch/torchtune training.set_activation_checkpointing -> torch.distributed.algorithms._checkpoint.checkpoint_wrapper.apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=lambda m: isinstance(m, auto_wrap_policy)), applied once to the model before training; the wrapped blocks' parameters are renamed blocks.N._checkpoint_wrapped_module.*
# class: correct-wrapper-checkpointing
# expect: pass
# why: every block is replaced by a non-reentrant CheckpointWrapper (activations recomputed in backward), float32 throughout, gradients cleared first; the wrapper renames the parameters but they are the same tensors, so loss, gradients and weights are the original step's (issue 28: it used to fail same-loss-and-grads with "could not evaluate your code's behaviour", a KeyError on a parameter name)
import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl,
    CheckpointWrapper,
    apply_activation_checkpointing,
    checkpoint_wrapper,
)


def set_activation_checkpointing(model, auto_wrap_policy):
    if any(isinstance(m, CheckpointWrapper) for m in model.modules()):
        return  # already wrapped: the same model comes back every step
    apply_activation_checkpointing(
        model,
        checkpoint_wrapper_fn=lambda m: checkpoint_wrapper(m, checkpoint_impl=CheckpointImpl.NO_REENTRANT),
        check_fn=lambda m: isinstance(m, auto_wrap_policy) and m in set(model.blocks),
    )


def train_step(model, optimizer, loss_fn, x, y):
    set_activation_checkpointing(model, nn.Sequential)
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


@torch.no_grad()
def evaluate(model, x):
    return model(x)
