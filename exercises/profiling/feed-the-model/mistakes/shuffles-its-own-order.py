# mistake: fetches whole batches from a BatchSampler over a RandomSampler (shuffle=True's), not over the sampler it was given, so the records come in an order of its own
# expect-fail: same-training
import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    batches = BatchSampler(RandomSampler(dataset), batch_size=batch_size, drop_last=False)
    for x, y in DataLoader(dataset, sampler=batches, batch_size=None):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
