# pattern: a news-recommendation training loop (Maguire1999/NewsRecommendationSystem news_recommendation/train.py, after yusanshi/news-recommendation): "Use `sampler=BatchSampler(...)` to support batch indexing of dataset, which is faster", `DataLoader(dataset, sampler=BatchSampler(..., drop_last=False), collate_fn=lambda x: x[0], pin_memory=True)` with the default batch_size=1 (a later version of the file says batch_size=None instead)
# class: batch-sampler-first-item
# expect: pass
# why: with batch_size=1 the DataLoader batches the BatchSampler's lists one at a time, so each fetch is one dataset[indices] call on a whole batch and the collate unwraps the one-item list: the sampler's order in batches of batch_size, the last short one kept, one decode per batch
from torch.utils.data import BatchSampler, DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    # Use `sampler=BatchSampler(...)` to support batch indexing of dataset, which is faster
    dataloader = DataLoader(
        dataset,
        sampler=BatchSampler(sampler, batch_size=batch_size, drop_last=False),
        collate_fn=lambda x: x[0],
        pin_memory=True,
    )
    for minibatch in dataloader:
        features, labels = (v.to(device) for v in minibatch)
        y_pred = model(features)
        loss = loss_fn(y_pred, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
