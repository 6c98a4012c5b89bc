# mistake: runs the loss in a function under torch.compiler.disable: nothing recompiles because nothing compiles
# expect-fail: runs-compiled
import torch


@torch.compiler.disable
def _eager_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
    length = tokens.shape[1]
    future = torch.ones(length, length, dtype=torch.bool, device=tokens.device).triu(1)
    log_probs = model.head(scores.masked_fill(future, float("-inf")).softmax(-1) @ h)[:, :-1].flatten(0, 1)
    log_probs = log_probs.log_softmax(-1)
    nll = -log_probs.gather(1, tokens[:, 1:].reshape(-1, 1)).squeeze(1)
    return ((1 - smoothing) * nll - smoothing * log_probs.mean(-1)).mean()


def compute_loss(model, tokens, smoothing):
    return _eager_loss(model, tokens, smoothing)
