# pattern: torchvision's detection reference (pytorch/vision references/detection/train.py): `train_batch_sampler = torch.utils.data.BatchSampler(train_sampler, args.batch_size, drop_last=True)` passed as `DataLoader(dataset, batch_sampler=train_batch_sampler, collate_fn=utils.collate_fn)`, the collate `tuple(zip(*batch))` (references/detection/utils.py) and the images stacked in the loop; adapted with drop_last=False and --workers 0
# class: batch-sampler-argument
# expect: fail
# expect-fail: fetches-whole-batches
# why: batch_sampler= batches the indices, not the fetch: the DataLoader's fetcher still calls dataset[i] for each of the 512 indices (the dataset defines no __getitems__) and the loop stacks the rows, so the batches are the original's but the per-record cost stays; the message should count the one-at-a-time fetches
import torch
import torch.utils.data


def collate_fn(batch):
    return tuple(zip(*batch))


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    train_batch_sampler = torch.utils.data.BatchSampler(sampler, batch_size, drop_last=False)
    data_loader = torch.utils.data.DataLoader(
        dataset, batch_sampler=train_batch_sampler, num_workers=0, collate_fn=collate_fn)
    model.train()
    for images, targets in data_loader:
        images = torch.stack([image.to(device) for image in images])
        targets = torch.stack([t.to(device) for t in targets])
        loss = loss_fn(model(images), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
