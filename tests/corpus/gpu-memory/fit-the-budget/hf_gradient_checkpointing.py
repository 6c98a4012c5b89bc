# pattern: huggingface/transformers gradient checkpointing (modeling_utils.gradient_checkpointing_enable: self._gradient_checkpointing_func = functools.partial(checkpoint, use_reentrant=False); the layer loop calls self._gradient_checkpointing_func(layer.__call__, hidden_states) when self.gradient_checkpointing and self.training), evaluation under @torch.no_grad()
# class: correct-hf-checkpointing
# expect: pass
# why: each block is recomputed in backward with the non-reentrant checkpoint, so only block inputs are kept; float32 throughout, gradients cleared first; evaluate builds no graph
import functools

import torch
from torch.utils.checkpoint import checkpoint

gradient_checkpointing_kwargs = {"use_reentrant": False}
_gradient_checkpointing_func = functools.partial(checkpoint, **gradient_checkpointing_kwargs)


def forward(model, hidden_states, gradient_checkpointing=True):
    for layer in model.blocks:
        if gradient_checkpointing and model.training:
            hidden_states = _gradient_checkpointing_func(layer.__call__, hidden_states)
        else:
            hidden_states = layer(hidden_states)
    return model.head(hidden_states)


def train_step(model, optimizer, loss_fn, x, y):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(forward(model, x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


@torch.no_grad()
def evaluate(model, x):
    return forward(model, x, gradient_checkpointing=False)
