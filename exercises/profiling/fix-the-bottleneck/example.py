"""What Run calls find_bottleneck with: a small classifier and 3 batches."""
import torch
from torch import nn


def example(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    batches = [(3 * torch.randn(64, 16, device=device) + 1, torch.randint(0, 4, (64,), device=device))
               for _ in range(3)]
    return model, optimizer, nn.CrossEntropyLoss(), batches
