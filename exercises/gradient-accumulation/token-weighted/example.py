"""What Run calls train with: the tiny token model, 5 micro-batches of 2 padded sequences of 6 tokens
(labels -100 at the padding), windows of 2 (the last one holds a single micro-batch)."""
import torch
from torch import nn


def example(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(16, 8), nn.Linear(8, 16)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    micro_batches = []
    for length in (6, 1, 4, 2, 5):
        tokens = torch.randint(1, 16, (2, 6))
        labels = torch.randint(0, 16, (2, 6))
        tokens[:, length:] = 0
        labels[:, length:] = -100
        micro_batches.append((tokens.to(device), labels.to(device)))
    return model, optimizer, micro_batches, 2
