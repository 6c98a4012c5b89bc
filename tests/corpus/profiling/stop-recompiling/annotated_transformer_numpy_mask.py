# pattern: harvardnlp/annotated-transformer (2018 post) subsequent_mask: np.triu(np.ones(attn_shape), k=1).astype('uint8'), torch.from_numpy(...) == 0
# class: numpy-mask
# expect: pass
# why: dynamo traces NumPy calls as tensor operations (torch._numpy), so np.ones/np.triu on the symbolic length keep it symbolic: two graphs, measured on torch 2.13; the smoothing is written out
import numpy as np
import torch
import torch.nn.functional as F


def subsequent_mask(size):
    attn_shape = (1, size, size)
    subsequent_mask = np.triu(np.ones(attn_shape), k=1).astype('uint8')
    return torch.from_numpy(subsequent_mask) == 0


def compute_loss(model, tokens, smoothing):
    x = model.embed(tokens)
    scores = torch.matmul(x, x.transpose(-2, -1)) / (x.size(-1) ** 0.5)
    scores = scores.masked_fill(subsequent_mask(tokens.size(1)).to(x.device) == 0, -1e9)
    logits = model.head(torch.matmul(F.softmax(scores, dim=-1), x))[:, :-1]
    logp = F.log_softmax(logits, dim=-1).flatten(0, 1)
    nll = -logp.gather(1, tokens[:, 1:].reshape(-1, 1)).squeeze(1)
    return ((1 - smoothing) * nll - smoothing * logp.mean(-1)).mean()
