# pattern: metrics taken with `.detach().cpu().numpy()` inside the step, as in many Kaggle/timm-style loops (timm train.py's `losses_m.update(loss.item(), ...)` family)
# class: host-copy
# expect: fail
# expect-fail: one-graph
# why: dynamo traces the NumPy call (it runs NumPy code as tensor operations) without a break, but appending to a global list guards the graph on that list, so every call compiles a new graph; the message should name the guard and its line
import numpy as np
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0
HISTORY = []


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    accuracy = (logits.argmax(dim=-1) == y).float().mean()
    HISTORY.append(np.asarray(accuracy.detach().cpu().numpy()))
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
