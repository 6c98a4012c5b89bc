"""The fix-the-bottleneck task: a small classifier whose step standardizes each sample in a Python loop.

Built identically in the learner's process (probe) and the grader's (checks). `slow_preprocess` and
`slow_train_step` are the starter's code: the grader's copy of the original, bottleneck included.
"""
import time

import torch
from torch import nn

from grader.checks.learner.scenarios import params, plain_step

FEATURES, HIDDEN, CLASSES, BATCH, BATCHES = 64, 32, 10, 128, 4
LR, MOMENTUM = 0.05, 0.9
EPS = 1e-5


def build(seed: int, device: str, batch: int = BATCH, batches: int = BATCHES):
    # The CPU generator only (the model is initialised on the CPU, then moved): torch.manual_seed also
    # queues a seeding of every lazy accelerator module with a formatted stack trace, which read source
    # files in the learner's process, 3 ms per call there against 0.3 ms here: it was timed on one side.
    torch.random.default_generator.manual_seed(seed)
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    g = torch.Generator().manual_seed(seed + 1)
    data = [((3 * torch.randn(batch, FEATURES, generator=g) + 1).to(device),
             torch.randint(0, CLASSES, (batch,), generator=g).to(device)) for _ in range(batches)]
    return model, optimizer, nn.CrossEntropyLoss(), data


def slow_preprocess(x):
    """Standardize each sample (row) to mean 0, standard deviation 1: one row at a time."""
    rows = []
    for row in x:
        rows.append((row - row.mean()) / (row.std() + EPS))
    return torch.stack(rows)


# The two profiled runs of find_bottleneck, in an order the grading side draws per run (referee.py): the
# original step (the slow preprocess swapped back in), and the step with a vectorized preprocess and the
# time moved into the model's forward, a wait of SLOW_FORWARD_S per call (a wait records no operators, so
# it adds nothing for the profiler to parse; the rest of that step takes ~1 ms). A fixed answer fails one.
SLOW_SPOTS = ("preprocess", "forward")
SLOW_FORWARD_S = 0.05


def fast_preprocess(x):
    """The same standardization, vectorized."""
    return (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + EPS)


def slow_forward_work(x):
    """What the grader's slowed forward does before the model's own."""
    time.sleep(SLOW_FORWARD_S)


def slow_train_step(model, optimizer, loss_fn, x, y):
    return plain_step(model, optimizer, loss_fn, slow_preprocess(x), y)


# The timing rounds (grader.checks.referee.timing: the referee times them, the probe runs the learner's side, which
# never imports the referee). Round 0 is a warm-up for both and is not counted. The verdict is the median of
# up to ROUNDS rounds' ratios against MIN_SPEEDUP, and the rounds stop as soon as 6 of them fall on one side
# of the bar: the median of ROUNDS could then no longer change side, so the verdict is the one all ROUNDS
# would give, in about half the time for a clear case.
ROUNDS = 11
# Original step over the learner's, the median of per-round ratios (grader.checks.grading.verdicts.speedup).
MIN_SPEEDUP = {"cpu": 2.0, "cuda": 2.0}
# A round's step, on a bigger batch than the profiled runs': the per-row loop grows with the rows while
# the rest of a round (the model, the optimizer, building and reporting it) hardly does, so a vectorized
# fix stands well clear of the bar. At 4 batches of 128 rows (and a 128-wide hidden layer) the rest was
# half of a fixed step's round, and correct fixes measured 1.9-2.3x (benchmarks/bottleneck_timing.py).
TIMED_BATCH, TIMED_BATCHES = 1024, 1


def build_timed(seed: int, device: str):
    """One timing round's model, optimizer, loss and data."""
    return build(seed, device, TIMED_BATCH, TIMED_BATCHES)


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def report(losses: list[float], model: torch.nn.Module) -> dict:
    """What ends a timing round: the losses and the weights after them."""
    return {"losses": losses, "params": params(model)}
