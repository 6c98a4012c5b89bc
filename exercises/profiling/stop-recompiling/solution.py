import torch


def compute_loss(model, tokens, smoothing):
    """Next-token loss of a one-layer causal attention model on `tokens` (batch, length), label-smoothed."""
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
    length = tokens.shape[1]
    # Built from the length in the graph: a symbolic size once dynamo makes the length dynamic, no Python key.
    future = torch.ones(length, length, dtype=torch.bool, device=tokens.device).triu(1)
    logits = model.head(scores.masked_fill(future, float("-inf")).softmax(-1) @ h)[:, :-1]
    log_probs = logits.flatten(0, 1).log_softmax(-1)
    nll = -log_probs.gather(1, tokens[:, 1:].reshape(-1, 1)).squeeze(1)
    # Label smoothing written out: `smoothing` is arithmetic on a Python float, which dynamo can keep as a
    # symbolic input; F.cross_entropy's label_smoothing= argument needs a constant, a guard on its value.
    return ((1 - smoothing) * nll - smoothing * log_probs.mean(-1)).mean()
