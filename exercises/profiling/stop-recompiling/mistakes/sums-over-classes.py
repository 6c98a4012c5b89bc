# mistake: writes the smoothing out but sums the log-probabilities over the classes instead of averaging them
# expect-fail: same-result
import torch


def compute_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
    length = tokens.shape[1]
    future = torch.ones(length, length, dtype=torch.bool, device=tokens.device).triu(1)
    log_probs = model.head(scores.masked_fill(future, float("-inf")).softmax(-1) @ h)[:, :-1].flatten(0, 1)
    log_probs = log_probs.log_softmax(-1)
    nll = -log_probs.gather(1, tokens[:, 1:].reshape(-1, 1)).squeeze(1)
    return ((1 - smoothing) * nll - smoothing * log_probs.sum(-1)).mean()
