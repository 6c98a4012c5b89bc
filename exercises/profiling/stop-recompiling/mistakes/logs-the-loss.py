# mistake: stops the recompiles but logs the cross-entropy with .item() midway, a graph break in every call
# expect-fail: bounded-compiles, runs-compiled
import torch


def compute_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
    length = tokens.shape[1]
    future = torch.ones(length, length, dtype=torch.bool, device=tokens.device).triu(1)
    log_probs = model.head(scores.masked_fill(future, float("-inf")).softmax(-1) @ h)[:, :-1].flatten(0, 1)
    log_probs = log_probs.log_softmax(-1)
    nll = -log_probs.gather(1, tokens[:, 1:].reshape(-1, 1)).squeeze(1)
    print(f"cross-entropy {nll.mean().item():.4f}")
    return ((1 - smoothing) * nll - smoothing * log_probs.mean(-1)).mean()
