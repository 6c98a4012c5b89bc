# pattern: huggingface/pytorch-image-models timm/loss/cross_entropy.py LabelSmoothingCrossEntropy (confidence * nll_loss + smoothing * smooth_loss), its smoothing handed in per step
# class: smoothing-written-out
# expect: pass
# why: timm's formula is F.cross_entropy's label smoothing as arithmetic on a Python float, which dynamo keeps symbolic; the mask comes from the length with tensor ops
import torch
import torch.nn.functional as F


def label_smoothing_cross_entropy(x, target, smoothing):
    confidence = 1. - smoothing
    logprobs = F.log_softmax(x, dim=-1)
    nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
    nll_loss = nll_loss.squeeze(1)
    smooth_loss = -logprobs.mean(dim=-1)
    loss = confidence * nll_loss + smoothing * smooth_loss
    return loss.mean()


def compute_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    T = tokens.shape[1]
    scores = (h @ h.transpose(1, 2)) * h.shape[-1] ** -0.5
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool, device=h.device), diagonal=1), float("-inf"))
    logits = model.head(scores.softmax(dim=-1) @ h)[:, :-1]
    return label_smoothing_cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten(), smoothing)
