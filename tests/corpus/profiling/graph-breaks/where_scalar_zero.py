# pattern: PaLM-style z-loss (log Z squared, as in flash-attn's cross_entropy `lse_square_scale`), gated with torch.where against a Python 0.0
# class: branch-as-where
# expect: pass
# why: torch.where with a scalar other side is one graph and the same loss and gradients as the original if
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    logits = model(x)
    log_z = torch.logsumexp(logits, dim=-1)
    z_loss = log_z.pow(2).mean()
    loss = F.cross_entropy(logits, y)
    return loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, 0.0)
