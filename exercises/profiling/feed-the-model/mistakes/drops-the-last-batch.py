# mistake: fetches whole batches, but with drop_last=True (the usual choice for training), so the last 320 records are never trained on
# expect-fail: same-training
import torch
from torch.utils.data import BatchSampler, DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    batches = BatchSampler(sampler, batch_size=batch_size, drop_last=True)
    for x, y in DataLoader(dataset, sampler=batches, batch_size=None):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
