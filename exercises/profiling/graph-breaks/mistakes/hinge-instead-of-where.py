# mistake: replaces the if by a hinge, Z_WEIGHT * relu(z_loss - Z_MAX): no break, but another loss over the threshold
# expect-fail: same-result
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return loss + Z_WEIGHT * torch.relu(z_loss - Z_MAX)
