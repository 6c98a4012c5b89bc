# pattern: huggingface/transformers models/llama/modeling_llama.py _make_causal_mask (v4.30): torch.full((tgt_len, tgt_len), finfo.min), mask_cond arange comparison, added to the scores
# class: additive-causal-mask
# expect: pass
# why: every operation takes the length as a size (full, arange, view), so the length stays symbolic; the smoothing is written out
import torch
import torch.nn.functional as F


def _make_causal_mask(tgt_len, dtype, device):
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min, device=device)
    mask_cond = torch.arange(mask.size(-1), device=device)
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    return mask[None, :, :]


def compute_loss(model, tokens, smoothing):
    hidden_states = model.embed(tokens)
    attn_weights = torch.matmul(hidden_states, hidden_states.transpose(1, 2)) / (hidden_states.shape[-1] ** 0.5)
    attn_weights = attn_weights + _make_causal_mask(tokens.shape[1], attn_weights.dtype, attn_weights.device)
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
    logits = model.head(torch.matmul(attn_weights, hidden_states))[:, :-1]
    lprobs = logits.log_softmax(-1).flatten(0, 1)
    nll = -lprobs.gather(-1, tokens[:, 1:].reshape(-1, 1)).squeeze(-1)
    return ((1 - smoothing) * nll - smoothing * lprobs.mean(-1)).mean()
