"""The amp-step task, built identically in the learner's process (probe) and the grader's (checks)."""
import torch
from torch import nn

CALLS = 3  # ordinary steps; one more call then feeds a batch whose fp16 loss overflows
LR, MOMENTUM = 0.05, 0.9


def build(seed: int, device: str):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    g = torch.Generator().manual_seed(seed + 1)
    batches = [(torch.randn(64, 16, generator=g).to(device), torch.randint(0, 4, (64,), generator=g).to(device))
               for _ in range(CALLS)]
    # Inputs of 1e6 overflow fp16 (max 65504) in the first Linear: the loss and gradients become inf/NaN.
    batches.append((torch.full((64, 16), 1e6).to(device), batches[0][1]))
    stale = [torch.randn(p.shape, generator=g).to(device) for p in model.parameters()]
    return model, optimizer, nn.CrossEntropyLoss(), batches, stale


def params(model):
    return {name: p.detach().float().cpu().clone() for name, p in model.named_parameters()}
