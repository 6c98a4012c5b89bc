import torch
from torch.utils.data import BatchSampler, DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    """One epoch: every record of `dataset` once, in the order `sampler` gives, in batches of `batch_size`
    (the last one shorter), one optimizer step per batch.

    dataset[i] decodes record i: (features, label). dataset[indices] (a list or 1-D tensor of indices)
    decodes all of them with one call: (features [k, F], labels [k]).
    """
    device = next(model.parameters()).device
    # The sampler's order cut into batches; each batch of indices is fetched with one dataset[indices] call.
    # batch_size=None turns off the loader's own batching and collating: the dataset returns whole batches.
    batches = BatchSampler(sampler, batch_size=batch_size, drop_last=False)
    loader = DataLoader(dataset, sampler=batches, batch_size=None, pin_memory=device.type == "cuda")
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
