# mistake: keeps the starter and sets torch.compiler.set_stance("eager_on_recompile"), so recompiles run in eager unseen
# expect-fail: bounded-compiles, runs-compiled
import torch
import torch.nn.functional as F

torch.compiler.set_stance("eager_on_recompile")

_CAUSAL = {}  # one mask per sequence length, built the first time that length is seen


def causal_mask(length, device):
    if length not in _CAUSAL:
        _CAUSAL[length] = torch.ones(length, length, dtype=torch.bool, device=device).triu(1)
    return _CAUSAL[length]


def compute_loss(model, tokens, smoothing):
    """Next-token loss of a one-layer causal attention model on `tokens` (batch, length), label-smoothed."""
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
    scores = scores.masked_fill(causal_mask(tokens.shape[1], tokens.device), float("-inf"))
    logits = model.head(scores.softmax(-1) @ h)[:, :-1]
    return F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten(), label_smoothing=smoothing)
