# mistake: thresholds each row's z-loss on its own, where(z > Z_MAX, z, 0).mean(), instead of the batch mean: no break, but another loss whenever a batch's rows lie on both sides of Z_MAX
# expect-fail: same-result
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z = torch.logsumexp(logits, dim=-1).pow(2)
    return loss + Z_WEIGHT * torch.where(z > Z_MAX, z, torch.zeros_like(z)).mean()
