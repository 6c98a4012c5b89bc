# pattern: PyTorch docs torch.nn.functional.cross_entropy (label_smoothing=float), called with a value a schedule changes every step
# class: constant-argument-guard
# expect: fail
# expect-fail: bounded-compiles, runs-compiled
# why: label_smoothing is a constant of the operator, so dynamo guards on its value: a new smoothing each step needs a new graph until the recompile limit, then eager; the message should name the `smoothing ==` guard
import torch
import torch.nn.functional as F


def compute_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    T = tokens.size(1)
    causal = torch.ones(T, T, device=tokens.device).tril().bool()
    att = (h @ h.transpose(-1, -2) / h.size(-1) ** 0.5).masked_fill(~causal, float("-inf"))
    logits = model.head(att.softmax(-1) @ h)[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1), label_smoothing=smoothing)
