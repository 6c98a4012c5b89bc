# pattern: torch.cond, the control-flow operator of the docs' "Control Flow - Cond" page (docs.pytorch.org cond.html): both branches traced as subgraphs, one run
# class: torch-cond
# expect: pass
# why: torch.cond keeps the branch in one graph and runs only the branch the data picks; the losses and gradients are the original's
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def _with_z(loss, z_loss):
    return loss + Z_WEIGHT * z_loss


def _without_z(loss, z_loss):
    return loss.clone()


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return torch.cond(z_loss > Z_MAX, _with_z, _without_z, (loss, z_loss))
