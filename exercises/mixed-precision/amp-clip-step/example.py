"""What Run calls train_step with: a tiny linear model, one batch and a clipping threshold (the grader's
own inputs are larger)."""
import torch
from torch import nn


def example(device):
    torch.manual_seed(0)
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(device)
    x, y = torch.randn(8, 4, device=device), torch.randn(8, 2, device=device)
    return model, optimizer, scaler, nn.MSELoss(), x, y, 0.1
