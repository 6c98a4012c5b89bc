# mistake: the forum's first answer to a slow DataLoader: more workers and pinned memory; each worker still decodes one record at a time
# expect-fail: fetches-whole-batches
# expect-skip: faster
import torch
from torch.utils.data import DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=2, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
