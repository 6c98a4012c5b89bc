"""The token-weighted task, built identically in the learner's process (probe) and the grader's (checks); the
token mean and the grading side's correct run are in reference.py, which no learner process can reach.

A tiny token model (an embedding and a linear head over a vocabulary of `VOCAB`, applied at every
position) trained by the learner's `train(model, optimizer, micro_batches, accum_steps)` on `MICRO_BATCHES`
micro-batches of padded sequences: `(tokens, labels)`, both `ROWS` x `SEQ_LEN`, the labels of padding
positions `IGNORE_INDEX` (-100, cross_entropy's default ignore_index). Windows of `ACCUM_STEPS`: 3, 3 and a
short last window of 2.

The micro-batches hold very different numbers of valid tokens: each window has one micro-batch of long
rows (10-12 valid tokens a row), one of short rows (1-2) and, in the full windows, one of medium rows
(4-7), in an order drawn from the seed. So a micro-batch's mean divided by accum_steps weighs the tokens
of a short micro-batch about 3-6 times more than a token mean over the window does, and those of a long
one about half as much; the short last window holds 60-76% of a full window's tokens (64-81), and differs
from the run's average window by 15-29% (measured over seeds 0-199). Each update's gradient error
against the token mean, over seeds 0-39: the solution at most 5.9e-7 of the largest entry, the closest
mistake (sliding-window-count.py) at least 9.6e-2 (windows.GRAD_TOLERANCE is 1e-3)."""
from __future__ import annotations

import torch
from torch import nn

from grader.checks.learner.scenarios import params

__all__ = ["build", "windows", "params", "ACCUM_STEPS", "MICRO_BATCHES", "IGNORE_INDEX", "LR"]

VOCAB = 16
DIM = 8
ROWS = 4
SEQ_LEN = 12
ACCUM_STEPS = 3
MICRO_BATCHES = 8  # windows of 3, 3 and a last, short window of 2
IGNORE_INDEX = -100
PAD = 0
LR = 0.5
LENGTHS = {"long": (10, 12), "medium": (4, 7), "short": (1, 2)}  # valid tokens per row, inclusive


def _kinds(g: torch.Generator) -> list[str]:
    """Each micro-batch's kind of rows: every window a long and a short micro-batch (and a medium one in a
    full window), in an order drawn from the seed."""
    kinds: list[str] = []
    for window in windows():
        these = ["long", "short", "medium"][:len(window)]
        kinds += [these[j] for j in torch.randperm(len(these), generator=g).tolist()]
    return kinds


def build(seed: int, device: str):
    """(model, optimizer, micro_batches) for the run's seed: the weights from `seed`, the data from
    `seed + 1`. The targets are a fixed permutation of the tokens, with a quarter of them random."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Embedding(VOCAB, DIM), nn.Linear(DIM, VOCAB)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    g = torch.Generator().manual_seed(seed + 1)
    mapping = torch.randperm(VOCAB, generator=g)
    micro_batches = []
    for kind in _kinds(g):
        low, high = LENGTHS[kind]
        lengths = torch.randint(low, high + 1, (ROWS,), generator=g)
        tokens = torch.randint(1, VOCAB, (ROWS, SEQ_LEN), generator=g)
        labels = torch.where(torch.rand(ROWS, SEQ_LEN, generator=g) < 0.25,
                             torch.randint(0, VOCAB, (ROWS, SEQ_LEN), generator=g), mapping[tokens])
        valid = torch.arange(SEQ_LEN) < lengths[:, None]
        tokens = torch.where(valid, tokens, PAD)
        labels = torch.where(valid, labels, IGNORE_INDEX)
        micro_batches.append((tokens.to(device), labels.to(device)))
    return model, optimizer, micro_batches


def windows(n: int = MICRO_BATCHES, accum_steps: int = ACCUM_STEPS) -> list[range]:
    """The micro-batch indices of each accumulation window, the last one possibly shorter."""
    return [range(start, min(start + accum_steps, n)) for start in range(0, n, accum_steps)]
