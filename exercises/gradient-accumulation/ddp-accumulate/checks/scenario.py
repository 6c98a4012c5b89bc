"""The ddp-accumulate task: each of 2 ranks gets its own micro-batches of one shared classification task.

Built identically in the learner's processes (probe, once per rank) and the grader's (checks, for both
ranks): the same seed gives every rank the same initial model, and rank r its own share of the data.
"""
import torch
from torch import nn

from grader.checks import seeded

WORLD = 2  # processes in the gloo group
MICRO_BATCHES, ACCUM_STEPS, MICRO_BATCH_SIZE = 6, 3, 16  # per rank: two windows of three
LR, MOMENTUM = 0.1, 0.9
TIMEOUT_S = 15  # a collective that one rank never joins fails after this, instead of hanging


def build_model(seed: int):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    return model, optimizer, nn.CrossEntropyLoss()


def micro_batches(seed: int, rank: int):
    data = seeded(seed + 1)
    shares = [[(torch.randn(MICRO_BATCH_SIZE, 8, generator=data), torch.randint(0, 3, (MICRO_BATCH_SIZE,), generator=data))
               for _ in range(MICRO_BATCHES)] for _ in range(WORLD)]
    return shares[rank]


def ends_window(i: int) -> bool:
    return (i + 1) % ACCUM_STEPS == 0 or i + 1 == MICRO_BATCHES


def params(model):
    return {name: p.detach().float().cpu().clone() for name, p in model.named_parameters()}
