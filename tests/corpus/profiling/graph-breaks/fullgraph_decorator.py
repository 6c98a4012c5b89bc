# pattern: `@torch.compile(backend="eager", fullgraph=True)` on the loss, the troubleshooting guide's way to make any graph break an error (docs.pytorch.org torch.compiler_troubleshooting, "fullgraph=True")
# class: fullgraph-check
# expect: pass
# why: the function has no break, so fullgraph=True compiles it; compiled again by the grader it is still one graph with the original's losses and weights
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


@torch.compile(backend="eager", fullgraph=True)
def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
