# pattern: Hugging Face datasets' `__getitems__` (datasets/arrow_dataset.py), which torch's _MapDatasetFetcher calls with the whole batch of indices when a dataset defines it (torch/utils/data/_utils/fetch.py), with the collate left to pass the batch through
# class: getitems-batched
# expect: pass
# why: the DataLoader keeps its own batching (batch_size, the sampler), and each batch reaches the dataset as one list of indices through __getitems__, decoded with one dataset[indices] call
import torch
from torch.utils.data import DataLoader, Dataset


class BatchedView(Dataset):
    """Lets the DataLoader fetch a whole batch at once, as datasets.Dataset.__getitems__ does."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        return self.dataset[index]

    def __getitems__(self, indices):
        return self.dataset[list(indices)]


def passthrough(batch):
    return batch


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    loader = DataLoader(BatchedView(dataset), batch_size=batch_size, sampler=sampler, collate_fn=passthrough)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
