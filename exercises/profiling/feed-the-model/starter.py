import torch
from torch.utils.data import DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    """One epoch: every record of `dataset` once, in the order `sampler` gives, in batches of `batch_size`
    (the last one shorter), one optimizer step per batch.

    dataset[i] decodes record i: (features, label). dataset[indices] (a list or 1-D tensor of indices)
    decodes all of them with one call: (features [k, F], labels [k]).
    """
    device = next(model.parameters()).device
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
