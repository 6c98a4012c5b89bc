# pattern: `if not torch.compiler.is_compiling(): print(...)`, the documented way to keep eager-only code out of a compiled region (docs.pytorch.org torch.compiler.is_compiling)
# class: is-compiling-guard
# expect: pass
# why: DEBATABLE, decided pass: dynamo folds is_compiling() to True while tracing, so the print is skipped without a break and the compiled loss is the original's; the log line then never prints under compile
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    if not torch.compiler.is_compiling():
        print(f"cross-entropy {loss.item():.4f}")
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    return loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
