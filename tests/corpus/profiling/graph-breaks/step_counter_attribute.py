# pattern: a step counter kept on the function for "log every N steps" (`if step % log_interval == 0`, nanoGPT's iter_num), here a function attribute
# class: setattr-on-function
# expect: fail
# expect-fail: no-graph-breaks
# why: dynamo cannot record setting an attribute on a function object, so the counter's line is a graph break (dynamo: "setattr() on unsupported type"); the message should name that line
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0
LOG_INTERVAL = 1000


def compute_loss(model, x, y):
    compute_loss.step = getattr(compute_loss, "step", 0) + 1
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    loss = loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
    return loss * (1.0 if compute_loss.step > 0 else 0.0)
