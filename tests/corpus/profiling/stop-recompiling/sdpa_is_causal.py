# pattern: PyTorch docs torch.nn.functional.scaled_dot_product_attention (is_causal=True, default scale 1/sqrt(E)), as nanoGPT's flash path uses it
# class: sdpa-causal
# expect: pass
# why: is_causal builds the mask inside the operator, no Python value of the length is needed; the smoothing is written out
import torch
import torch.nn.functional as F


def compute_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    y = F.scaled_dot_product_attention(h, h, h, is_causal=True)
    logits = model.head(y)[:, :-1]
    log_probs = F.log_softmax(logits, dim=-1)
    targets = tokens[:, 1:]
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    return torch.mean((1 - smoothing) * nll + smoothing * uniform)
