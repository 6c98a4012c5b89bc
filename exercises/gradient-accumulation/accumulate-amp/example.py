"""What Run calls train with: a small classifier, 5 micro-batches of 4 samples, windows of 2 (the last one
holds a single micro-batch)."""
import torch
from torch import nn


def example(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(device)
    micro_batches = [(torch.randn(4, 6, device=device), torch.randint(0, 3, (4,), device=device))
                     for _ in range(5)]
    return model, optimizer, scaler, nn.CrossEntropyLoss(), micro_batches, 2
