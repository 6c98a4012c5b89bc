# pattern: the PyTorch "Datasets & DataLoaders" tutorial's `DataLoader(training_data, batch_size=64, shuffle=True)` (pytorch.org/tutorials/beginner/basics/data_tutorial.html), used in place of the sampler the loop was given
# class: shuffle-instead-of-sampler
# expect: fail
# expect-fail: same-training, fetches-whole-batches
# why: shuffle=True draws an order of its own, so the batches hold other records than the original's, and every record is still fetched one at a time; the messages should name both
import torch
from torch.utils.data import DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    train_dataloader = DataLoader(dataset, batch_size=batch_size, shuffle=True)
    model.train()
    for batch, (X, y) in enumerate(train_dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
