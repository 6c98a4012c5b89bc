# pattern: the torch.compile troubleshooting guide's advice for data-dependent control flow, written as a mask multiply (docs.pytorch.org torch.compiler_troubleshooting, "data-dependent operations")
# class: branch-as-mask
# expect: pass
# why: `z_loss * (z_loss > Z_MAX)` is z-loss or exactly 0 with the same gradient as the original if: one graph, same losses and weights
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return loss + Z_WEIGHT * z_loss * (z_loss > Z_MAX)
