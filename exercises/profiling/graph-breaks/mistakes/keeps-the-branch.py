# mistake: removes the logging but keeps the Python if on a tensor (data-dependent branching)
# expect-fail: no-graph-breaks
# expect-skip: one-graph
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    if z_loss > Z_MAX:
        loss = loss + Z_WEIGHT * z_loss
    return loss
