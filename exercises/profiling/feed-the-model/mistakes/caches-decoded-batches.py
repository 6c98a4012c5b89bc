# mistake: keeps the decoded batches in a module-level cache so later epochs skip the decoding; the next call's dataset holds other records, and it trains on the old ones
# expect-fail: same-training
import torch
from torch.utils.data import BatchSampler

_decoded = {}


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    for k, indices in enumerate(BatchSampler(sampler, batch_size, drop_last=False)):
        if k not in _decoded:
            _decoded[k] = dataset[indices]
        x, y = _decoded[k]
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
