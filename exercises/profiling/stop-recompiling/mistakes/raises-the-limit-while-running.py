# mistake: keeps the starter and raises dynamo's recompile limit from inside compute_loss, outside the graph
# expect-fail: bounded-compiles, runs-compiled
import torch
import torch.nn.functional as F

_CAUSAL = {}


@torch.compiler.disable
def causal_mask(length, device):
    torch._dynamo.config.recompile_limit = 64
    if length not in _CAUSAL:
        _CAUSAL[length] = torch.ones(length, length, dtype=torch.bool, device=device).triu(1)
    return _CAUSAL[length]


def compute_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
    scores = scores.masked_fill(causal_mask(tokens.shape[1], tokens.device), float("-inf"))
    logits = model.head(scores.softmax(-1) @ h)[:, :-1]
    return F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten(), label_smoothing=smoothing)
