# pattern: karpathy/nanoGPT model.py CausalSelfAttention: a tril "bias" buffer built once for block_size, sliced [:T, :T] each forward, masked_fill(... == 0, -inf)
# class: sliced-mask-buffer
# expect: pass
# why: slicing a fixed buffer by the length works on a symbolic length, and the smoothing is written out as arithmetic: two graphs, every call compiled
import torch
from torch.nn import functional as F

BLOCK_SIZE = 1024
bias = torch.tril(torch.ones(BLOCK_SIZE, BLOCK_SIZE))


def compute_loss(model, tokens, smoothing):
    B, T = tokens.size()
    x = model.embed(tokens)
    att = (x @ x.transpose(-2, -1)) * (1.0 / x.size(-1) ** 0.5)
    att = att.masked_fill(bias[:T, :T].to(x.device) == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    logits = model.head(att @ x)[:, :-1, :]
    logprobs = F.log_softmax(logits.reshape(-1, logits.size(-1)), dim=-1)
    nll = -logprobs.gather(dim=-1, index=tokens[:, 1:].reshape(-1, 1)).squeeze(1)
    return ((1.0 - smoothing) * nll + smoothing * -logprobs.mean(dim=-1)).mean()
