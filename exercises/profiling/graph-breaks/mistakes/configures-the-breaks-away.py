# mistake: keeps .item() and print and sets dynamo's config (capture_scalar_outputs, reorderable_logging_functions) instead
# expect-fail: no-graph-breaks
# expect-skip: one-graph
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0

torch._dynamo.config.capture_scalar_outputs = True
torch._dynamo.config.reorderable_logging_functions.add(print)


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    print("cross-entropy", loss.item())
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
