"""What Run calls train with: a small regression model, tiny targets (as in the exercise), 5 steps."""
import torch
from torch import nn


def example(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(32, 8, device=device)
    y = 1e-4 * torch.randn(32, 4, device=device)
    return model, optimizer, nn.MSELoss(), x, y, 5
