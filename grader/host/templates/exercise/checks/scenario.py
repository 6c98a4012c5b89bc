"""The task, built identically in the learner's process (probe.py) and the grading process (test_*.py)."""
import torch
from torch import nn

from grader.checks import seeded

LR = 0.1


def build(seed: int, device: str) -> tuple[nn.Module, torch.optim.Optimizer, nn.Module, torch.Tensor, torch.Tensor]:
    data = seeded(seed)  # the same seed gives the same model and data on both sides
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    x = torch.randn(32, 8, generator=data).to(device)
    y = torch.randint(0, 3, (32,), generator=data).to(device)
    return model, optimizer, nn.CrossEntropyLoss(), x, y


def params(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().float().cpu().clone() for name, p in model.named_parameters()}
