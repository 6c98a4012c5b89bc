# mistake: builds the mask with a Python loop over the positions, which dynamo unrolls for each length
# expect-fail: bounded-compiles, runs-compiled
import torch


def compute_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
    rows = [torch.arange(tokens.shape[1], device=tokens.device) > i for i in range(tokens.shape[1])]
    future = torch.stack(rows)
    log_probs = model.head(scores.masked_fill(future, float("-inf")).softmax(-1) @ h)[:, :-1].flatten(0, 1)
    log_probs = log_probs.log_softmax(-1)
    nll = -log_probs.gather(1, tokens[:, 1:].reshape(-1, 1)).squeeze(1)
    return ((1 - smoothing) * nll - smoothing * log_probs.mean(-1)).mean()
