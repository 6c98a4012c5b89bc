"""The accumulate-amp task, built identically in the learner's process (probe) and the grader's (checks)."""
import torch
from torch import nn

ACCUM_STEPS = 3
MICRO_BATCHES = 7  # windows of 3, 3 and a last, partial window of 1
MICRO_BATCH_SIZE = 16
LR = 0.1


def build(seed: int, device: str):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    g = torch.Generator().manual_seed(seed + 1)
    micro_batches = [(torch.randn(MICRO_BATCH_SIZE, 16, generator=g).to(device),
                      torch.randint(0, 4, (MICRO_BATCH_SIZE,), generator=g).to(device))
                     for _ in range(MICRO_BATCHES)]
    return model, optimizer, nn.CrossEntropyLoss(), micro_batches


def windows(n: int = MICRO_BATCHES, accum_steps: int = ACCUM_STEPS) -> list[range]:
    """The micro-batch indices of each accumulation window, the last one possibly shorter."""
    return [range(start, min(start + accum_steps, n)) for start in range(0, n, accum_steps)]
