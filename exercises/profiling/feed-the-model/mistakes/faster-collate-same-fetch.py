# mistake: rewrites the collate function to stack the batch faster, but the DataLoader still fetches dataset[i] once per record before it
# expect-fail: fetches-whole-batches
# expect-skip: faster
import torch
from torch.utils.data import DataLoader


def collate(records):
    features = torch.empty(len(records), records[0][0].shape[0])
    for i, (x, _) in enumerate(records):
        features[i] = x
    return features, torch.stack([y for _, y in records])


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    for x, y in DataLoader(dataset, batch_size=batch_size, sampler=sampler, collate_fn=collate):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
