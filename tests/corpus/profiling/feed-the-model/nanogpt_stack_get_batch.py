# pattern: nanoGPT's get_batch (karpathy/nanoGPT train.py): `x = torch.stack([torch.from_numpy(...data[i:i+block_size]...) for i in ix])`, one row fetched per index and stacked, adapted to the sampler's order
# class: per-row-stack
# expect: fail
# expect-fail: fetches-whole-batches
# why: the batches are right, but every record is fetched and decoded on its own (dataset[i], 8000 calls) and then stacked: the per-record cost the exercise is about; the message should count the one-at-a-time fetches
import torch
from torch.utils.data import BatchSampler


def get_batch(dataset, ix, device):
    x = torch.stack([dataset[i][0] for i in ix])
    y = torch.stack([dataset[i][1] for i in ix])
    return x.to(device), y.to(device)


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    for ix in BatchSampler(sampler, batch_size, drop_last=False):
        X, Y = get_batch(dataset, ix, device)
        logits = model(X)
        loss = loss_fn(logits, Y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
