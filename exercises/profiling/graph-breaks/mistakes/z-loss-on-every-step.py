# mistake: replaces the if by always adding the z-loss, also on the steps where it is under Z_MAX
# expect-fail: same-result
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return loss + Z_WEIGHT * z_loss
