# pattern: NVIDIA/Model-Optimizer PR #1343 hf_eagle.py _get_ttt_attention_mask: attention masks cached in a dict (`self._cached_attn_blk_masks`), keyed with seq_length as its review asked
# class: dict-keyed-by-length
# expect: fail
# expect-fail: bounded-compiles, runs-compiled
# why: a dict lookup needs the concrete length, so dynamo guards on `tokens.size(1)` and compiles per length up to the recompile limit, then runs the rest in eager
import torch
import torch.nn.functional as F

_mask_cache = {}


def get_mask(seq_len, device):
    mask = _mask_cache.get(seq_len)
    if mask is None:
        mask = torch.full((seq_len, seq_len), float("-inf"), device=device).triu(1)
        _mask_cache[seq_len] = mask
    return mask


def compute_loss(model, tokens, smoothing):
    h = model.embed(tokens)
    scores = h @ h.transpose(1, 2) / h.shape[-1] ** 0.5 + get_mask(tokens.shape[1], h.device)
    logits = model.head(scores.softmax(-1) @ h)[:, :-1]
    logp = logits.log_softmax(-1).reshape(-1, logits.shape[-1])
    nll = -logp.gather(1, tokens[:, 1:].reshape(-1, 1))[:, 0]
    return ((1 - smoothing) * nll - smoothing * logp.mean(-1)).mean()
