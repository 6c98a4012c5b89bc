# pattern: transformers' TrainingArguments(dataloader_drop_last=True) (transformers/trainer.py get_train_dataloader passes drop_last to the DataLoader), with the batch fetched whole through a BatchSampler
# class: drop-last
# expect: fail
# expect-fail: same-training
# why: drop_last=True leaves out the last 320 records of the epoch, so the weights after it are not the original's; the message should say the last batch was dropped
import torch
from torch.utils.data import BatchSampler, DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size, dataloader_drop_last=True):
    device = next(model.parameters()).device
    batch_sampler = BatchSampler(sampler, batch_size=batch_size, drop_last=dataloader_drop_last)
    train_dataloader = DataLoader(dataset, sampler=batch_sampler, batch_size=None)
    for inputs in train_dataloader:
        features, labels = (t.to(device) for t in inputs)
        loss = loss_fn(model(features), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
