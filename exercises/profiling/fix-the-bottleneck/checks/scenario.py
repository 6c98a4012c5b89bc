"""The fix-the-bottleneck task: a small classifier whose step standardizes each sample in a Python loop.

Built identically in the learner's process (probe) and the grader's (checks). `slow_preprocess` and
`slow_train_step` are the starter's code: the grader's copy of the original, bottleneck included.
"""
import time

import torch
from torch import nn

from grader.checks.scenarios import params, plain_step

FEATURES, CLASSES, BATCH, BATCHES = 64, 10, 128, 4
LR, MOMENTUM = 0.05, 0.9
EPS = 1e-5


def build(seed: int, device: str):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    g = torch.Generator().manual_seed(seed + 1)
    batches = [((3 * torch.randn(BATCH, FEATURES, generator=g) + 1).to(device),
                torch.randint(0, CLASSES, (BATCH,), generator=g).to(device)) for _ in range(BATCHES)]
    return model, optimizer, nn.CrossEntropyLoss(), batches


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


# The timing rounds, as both sides run them (referee.py times them; the probe runs the learner's side,
# which never imports the referee).
ROUNDS = 11  # timed rounds per side; round 0 is a warm-up for both and is not counted


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def report(losses: list[float], model: torch.nn.Module) -> dict:
    """What ends a timing round: the losses and the weights after them."""
    return {"losses": losses, "params": params(model)}
