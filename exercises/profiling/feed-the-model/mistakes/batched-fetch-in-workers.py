# mistake: fetches whole batches, but in two DataLoader worker processes started anew every epoch (the tutorial's num_workers=2 kept on), which costs more than the batched fetch leaves to save
# expect-fail: faster
import torch
from torch.utils.data import BatchSampler, DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    batches = BatchSampler(sampler, batch_size=batch_size, drop_last=False)
    loader = DataLoader(dataset, sampler=batches, batch_size=None, num_workers=2)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
