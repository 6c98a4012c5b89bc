# pattern: the reentrant-checkpoint workaround from discuss.pytorch.org/t/checkpoint-with-no-grad-requiring-inputs-problem/19117/11, copied into many repositories: class ModuleWrapperIgnores2ndArg(nn.Module) whose forward(self, x, dummy_arg=None) asserts dummy_arg is not None and returns self.module(x), called as checkpoint(self.module_wrapper, x, self.dummy_tensor) with self.dummy_tensor = torch.ones(1, dtype=torch.float32, requires_grad=True) so that the checkpoint's output requires grad; use_reentrant left implicit (the reentrant variant), evaluation under torch.no_grad()
# class: reentrant-dummy-input
# expect: pass
# why: an input that requires grad makes the reentrant checkpoint's output part of the graph, so its backward recomputes each block and accumulates the weights' gradients: only block inputs are kept (measured here at 49% of the original step's memory, against 41% for use_reentrant=False per block; the budget is 75%), float32, gradients cleared first, the same loss and gradients; the exercise asks for use_reentrant=False, but what it checks (memory, loss, gradients) is met
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class ModuleWrapperIgnores2ndArg(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x, dummy_arg=None):
        assert dummy_arg is not None
        x = self.module(x)
        return x


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    dummy_tensor = torch.ones(1, dtype=torch.float32, requires_grad=True)
    h = x
    for block in model.blocks:
        h = checkpoint(ModuleWrapperIgnores2ndArg(block), h, dummy_tensor)
    loss = loss_fn(model.head(h), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def evaluate(model, x):
    with torch.no_grad():
        return model(x)
