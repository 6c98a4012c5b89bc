import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    """Cross-entropy, plus a z-loss on the logits once it grows past Z_MAX. Return the loss."""
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    ce = loss.item()
    print(f"cross-entropy {ce:.4f}")
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    if z_loss > Z_MAX:
        loss = loss + Z_WEIGHT * z_loss
    return loss
