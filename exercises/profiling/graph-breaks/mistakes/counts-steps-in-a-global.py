# mistake: keeps a Python step counter in a global: dynamo guards on its value and recompiles every call
# expect-fail: one-graph
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0

STEP = 0


def compute_loss(model, x, y):
    global STEP
    STEP += 1
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
