"""The ddp-accumulate task: each of 2 ranks gets its own micro-batches of one shared classification task.

Built identically in the learner's process (rank 1, the probe), the grader's own rank 0 (grader_rank.py,
sent to it by the referee) and the checks: the run's seed gives both ranks the same initial model; each
rank's micro-batches come from a seed of its own (rank 0's is drawn by the grading side and never told to
the learner's process). What a correct run ends with is computed in the grading process only
(reference.py), never here: this module is loaded in the learner's process.
"""
import torch
from torch import nn

from grader.checks import seeded
from grader.checks.learner.ddp import GRADER_RANK, LEARNER_RANK, WORLD
from grader.checks.learner.scenarios import params

__all__ = ["params", "GRADER_RANK", "LEARNER_RANK", "WORLD"]

# Per rank: a window of three, then a short last window of two, whose loss must be divided by 2, not 3.
MICRO_BATCHES, ACCUM_STEPS, MICRO_BATCH_SIZE = 5, 3, 16
LR, MOMENTUM = 0.1, 0.9


def build_model(seed: int):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    return model, optimizer, nn.CrossEntropyLoss()


def micro_batches(seed: int):
    """One rank's micro-batches."""
    data = seeded(seed + 1)
    return [(torch.randn(MICRO_BATCH_SIZE, 8, generator=data), torch.randint(0, 3, (MICRO_BATCH_SIZE,), generator=data))
            for _ in range(MICRO_BATCHES)]


def windows() -> list[list[int]]:
    return [list(range(start, min(start + ACCUM_STEPS, MICRO_BATCHES))) for start in range(0, MICRO_BATCHES, ACCUM_STEPS)]


def ends_window(i: int) -> bool:
    return (i + 1) % ACCUM_STEPS == 0 or i + 1 == MICRO_BATCHES


def size() -> int:
    """How many values the model's gradients hold: the size of every all-reduce either rank makes."""
    return sum(p.numel() for p in build_model(0)[0].parameters())
