# pattern: transformers Trainer's logging_nan_inf_filter, `if torch.isnan(tr_loss_step) or torch.isinf(tr_loss_step)`, inside the loss (huggingface/transformers trainer.py)
# class: data-dependent-guard
# expect: fail
# expect-fail: no-graph-breaks
# why: a Python `if` on `torch.isnan(loss)` is data-dependent branching, a graph break at its line, even though the loss is right
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    loss = loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
    if torch.isnan(loss) or torch.isinf(loss):
        raise FloatingPointError("loss is nan or inf")
    return loss
