# pattern: nanoGPT train.py, `lossf = loss.item() * gradient_accumulation_steps` for the log line, moved into the compiled loss (karpathy/nanoGPT)
# class: item-logging
# expect: fail
# expect-fail: no-graph-breaks
# why: `.item()` and the print are graph breaks, and the message should name their lines (nanoGPT itself logs outside the compiled model); torch 2.13's dynamo then fails on the f-string on the second call, which the message adds, and same-result is not judged
import torch
import torch.nn.functional as F

Z_WEIGHT, Z_MAX = 0.01, 4.0
gradient_accumulation_steps = 1


def compute_loss(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1), ignore_index=-1)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    loss = loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
    lossf = loss.item() * gradient_accumulation_steps
    print(f"loss {lossf:.4f}")
    return loss
