# mistake: stops the recompiles by leaving the label smoothing out: plain cross-entropy
# expect-fail: same-result
import torch
import torch.nn.functional as F


def compute_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
    length = tokens.shape[1]
    future = torch.ones(length, length, dtype=torch.bool, device=tokens.device).triu(1)
    logits = model.head(scores.masked_fill(future, float("-inf")).softmax(-1) @ h)[:, :-1]
    return F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
