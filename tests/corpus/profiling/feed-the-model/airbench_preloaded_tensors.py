# pattern: Keller Jordan's airbench `CifarLoader` (KellerJordan/cifar10-airbench, airbench94.py): the whole dataset decoded once into tensors, then each batch taken by indexing them with the epoch's order, no DataLoader at all
# class: preload-then-index
# expect: pass
# why: one dataset[indices] call decodes every record at the start of the epoch (the records of this call, nothing kept across calls), and the batches follow the sampler's order with the last short one kept: the same training, and far less per-record work
import torch


class PreloadedLoader:
    def __init__(self, dataset, order, batch_size):
        self.images, self.labels = dataset[list(range(len(dataset)))]
        self.order = torch.as_tensor(list(order))
        self.batch_size = batch_size

    def __len__(self):
        return -(-len(self.order) // self.batch_size)

    def __iter__(self):
        for i in range(len(self)):
            idx = self.order[i * self.batch_size:(i + 1) * self.batch_size]
            yield self.images[idx], self.labels[idx]


def train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    device = next(model.parameters()).device
    for inputs, labels in PreloadedLoader(dataset, sampler, batch_size):
        outputs = model(inputs.to(device))
        loss = loss_fn(outputs, labels.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
