# pattern: the PyTorch forums' answer to "DataLoader is slow with a dataset that can index many items at once": a BatchSampler passed as the sampler with batch_size=None, so the dataset gets the whole list of indices (torch.utils.data docs, "Disable automatic batching")
# class: batch-sampler-as-sampler
# expect: pass
# why: each batch is one dataset[indices] call in the sampler's order, the last short batch kept; the model's steps are then most of the epoch
import torch
from torch.utils.data import BatchSampler, DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    loader = DataLoader(
        dataset,
        batch_size=None,  # disable automatic batching: the dataset returns whole batches
        sampler=BatchSampler(sampler, batch_size=batch_size, drop_last=False),
    )
    model.train()
    for step, (inputs, targets) in enumerate(loader):
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad(set_to_none=True)
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
        loss.backward()
        optimizer.step()
