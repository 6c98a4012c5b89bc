# mistake: hides every break by running the original loss eagerly inside a disabled function
# expect-fail: no-graph-breaks
# expect-skip: one-graph
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


@torch.compiler.disable
def _eager_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    print(f"cross-entropy {loss.item():.4f}")
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    if z_loss > Z_MAX:
        loss = loss + Z_WEIGHT * z_loss
    return loss


def compute_loss(model, x, y):
    return _eager_loss(model, x, y)
