# mistake: slices the dataset in its own order, dataset[start:start + batch_size], ignoring the sampler's order
# expect-fail: same-training
import torch


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    for start in range(0, len(dataset), batch_size):
        x, y = dataset[start:start + batch_size]
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
