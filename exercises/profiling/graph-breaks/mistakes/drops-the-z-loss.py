# mistake: removes the breaks by removing the branch and the z-loss with it
# expect-fail: same-result
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits, y)
