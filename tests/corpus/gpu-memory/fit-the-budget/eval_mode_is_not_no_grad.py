# pattern: the recurring forum confusion "model.eval() vs torch.no_grad()": evaluate() switches the model to eval mode and assumes that disables autograd (it only changes dropout/batch-norm behaviour); the training step is the correct non-reentrant per-block checkpointing
# class: eval-mode-not-no-grad
# expect: fail
# expect-fail: eval-without-graph
# why: model.eval() does not stop autograd: the forward builds a graph and keeps its activations; the message should say that eval() is not no_grad()
import torch
from torch.utils.checkpoint import checkpoint


def train_step(model, optimizer, loss_fn, x, y):
    model.train()
    optimizer.zero_grad()
    h = x
    for block in model.blocks:
        h = checkpoint(block, h, use_reentrant=False)
    loss = loss_fn(model.head(h), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def evaluate(model, x):
    model.eval()
    return model(x)
