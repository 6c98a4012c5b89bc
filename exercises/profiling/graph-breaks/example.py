"""What Run calls compute_loss with: a small classifier and one batch (Run calls it as it is, not compiled)."""
import torch
from torch import nn


def example(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 5)).to(device)
    x, y = 16 * torch.randn(64, 16, device=device), torch.randint(0, 5, (64,), device=device)
    return model, x, y
