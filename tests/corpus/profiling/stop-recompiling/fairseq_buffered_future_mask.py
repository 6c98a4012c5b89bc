# pattern: facebookresearch/fairseq fairseq/models/transformer/transformer_decoder.py buffered_future_mask: a -inf triu mask kept on self._future_mask, rebuilt when a longer dim arrives, sliced [:dim, :dim]
# class: grown-mask-cache
# expect: fail
# expect-fail: bounded-compiles
# why: the cache's size is compared with the length in Python (`size(0) < dim`), a guard that fails when a batch longer than the cache arrives (the scenario's longest comes last): a third graph; the message should name that guard and its line
import torch
import torch.nn.functional as F


class _Cache:
    future_mask = torch.empty(0)


def fill_with_neg_inf(t):
    return t.float().fill_(float("-inf")).type_as(t)


def buffered_future_mask(tensor):
    dim = tensor.size(1)
    if _Cache.future_mask.size(0) == 0 or _Cache.future_mask.size(0) < dim:
        _Cache.future_mask = torch.triu(fill_with_neg_inf(torch.zeros([dim, dim])), 1)
    _Cache.future_mask = _Cache.future_mask.to(tensor)
    return _Cache.future_mask[:dim, :dim]


def compute_loss(model, tokens, smoothing):
    x = model.embed(tokens)
    attn = torch.bmm(x, x.transpose(1, 2)) * x.size(-1) ** -0.5
    attn = attn + buffered_future_mask(attn)
    logits = model.head(torch.bmm(F.softmax(attn, dim=-1), x))[:, :-1]
    lprobs = F.log_softmax(logits, dim=-1).view(-1, logits.size(-1))
    nll_loss = -lprobs.gather(dim=-1, index=tokens[:, 1:].reshape(-1, 1)).squeeze(-1)
    smooth_loss = -lprobs.sum(dim=-1, keepdim=False)
    eps_i = smoothing / lprobs.size(-1)
    return ((1.0 - smoothing) * nll_loss + eps_i * smooth_loss).mean()
