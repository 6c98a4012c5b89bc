# pattern: PyTorch Lightning's warning "The 'train_dataloader' does not have many workers which may be a bottleneck. Consider increasing the value of the `num_workers` argument" (lightning/pytorch/trainer/connectors/data_connector.py), followed: workers, persistent_workers and pin_memory on the same per-record loader
# class: more-workers
# expect: fail
# expect-fail: fetches-whole-batches
# why: the workers still call dataset[i] once per record and collate 512 rows a batch: the same work spread over CPU cores the grader does not have to spare; the message should say that workers do not remove the per-record cost
import torch
from torch.utils.data import DataLoader


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=2,
                        persistent_workers=True, pin_memory=torch.cuda.is_available())
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)
        optimizer.zero_grad()
        output = model(data)
        loss = loss_fn(output, target)
        loss.backward()
        optimizer.step()
