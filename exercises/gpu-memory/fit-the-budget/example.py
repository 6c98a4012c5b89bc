"""What Run calls train_step with: a small model shaped like the exercise's (`model.blocks`, `model.head`)."""
import torch
from torch import nn


class SmallMLP(nn.Module):
    def __init__(self, width=16, blocks=3, classes=4):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width),
                                                  nn.GELU()) for _ in range(blocks))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def example(device):
    torch.manual_seed(0)
    model = SmallMLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16, device=device), torch.randint(0, 4, (8,), device=device)
    return model, optimizer, nn.CrossEntropyLoss(), x, y
