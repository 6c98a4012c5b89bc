"""fix-underflow's regression task (the same numbers): its fp16 gradients underflow, its bf16 ones do not.

Targets are 5e-4 * tanh(X W1) W2 and the head starts 100x smaller than usual, so the MSE gradients
are ~1e-8..1e-6: below float16's smallest normal (6e-5) and mostly below its smallest subnormal.
"""
import math

import torch
from torch import nn

STEPS = 200
SAMPLES, TARGET_SCALE = 256, 5e-4


def build(seed: int, device: str):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES, 32, generator=g)
    w1 = torch.randn(32, 64, generator=g) / math.sqrt(32)
    w2 = torch.randn(64, 64, generator=g) / math.sqrt(64)
    y = TARGET_SCALE * torch.tanh(x @ w1) @ w2
    torch.manual_seed(seed + 1)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 64))
    with torch.no_grad():
        model[4].weight.mul_(1e-2)
        model[4].bias.zero_()
    model = model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return model, optimizer, nn.MSELoss(), x.to(device), y.to(device)


def final_loss(model, x, y) -> float:
    """The fp32 loss of a trained model: computed by the checks, not taken from the learner's word."""
    with torch.no_grad():
        return float(nn.functional.mse_loss(model.float()(x.float()), y.float()))
