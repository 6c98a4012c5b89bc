# mistake: calls next(iter(loader)) at every step, which starts a fresh pass each time, so every step trains on the first batch again
# expect-fail: same-training
import torch
from torch.utils.data import BatchSampler, DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    loader = DataLoader(dataset, sampler=BatchSampler(sampler, batch_size, drop_last=False), batch_size=None)
    for _ in range(len(loader)):
        x, y = next(iter(loader))
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
