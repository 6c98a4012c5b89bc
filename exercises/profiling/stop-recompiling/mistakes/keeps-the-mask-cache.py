# mistake: writes the smoothing out, but keeps the causal mask in a dict keyed by the length
# expect-fail: bounded-compiles, runs-compiled
import torch

_CAUSAL = {}


def causal_mask(length, device):
    if length not in _CAUSAL:
        _CAUSAL[length] = torch.ones(length, length, dtype=torch.bool, device=device).triu(1)
    return _CAUSAL[length]


def compute_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
    scores = scores.masked_fill(causal_mask(tokens.shape[1], tokens.device), float("-inf"))
    log_probs = model.head(scores.softmax(-1) @ h)[:, :-1].flatten(0, 1).log_softmax(-1)
    nll = -log_probs.gather(1, tokens[:, 1:].reshape(-1, 1)).squeeze(1)
    return ((1 - smoothing) * nll - smoothing * log_probs.mean(-1)).mean()
