"""The ddp-clip task: each of 2 ranks gets its own micro-batches of one shared classification task, and
every window's update is clipped.

Built identically in the learner's process (rank 1, the probe), the grader's own rank 0 (other_rank.py)
and the checks: the run's seed gives both ranks the same initial model; each rank's micro-batches come
from a seed of its own (rank 0's is drawn by the grading side and never told to the learner's process).

The windows are chosen so that clipping matters and cannot hide anything: the two full windows are loud
(inputs of scale 2: the global gradient norm, of both ranks' mean, is 0.22-0.87, 2.2-8.7 times MAX_NORM,
and each rank's own norm differs from it by 7.8% or more, on 900 windows of seeds 0-449 along the
reference's run, measured) and the short last window is quiet (inputs of scale 0.2: norm 0.023-0.065,
under MAX_NORM, so a correct step leaves it unclipped). Clipping to a fixed norm erases how a gradient was scaled, so on a clipped window a
loss divided by the wrong window size would step exactly as a correct one does; on the quiet window it
shows. The model has no biases, so a window's gradient scales with its inputs (a ReLU network without
biases is positively homogeneous), which is what makes the quiet window quiet on every seed.

The model is float32 and not under autocast: what this exercise is about, the loss scale in the
accumulated gradients, is the GradScaler's (65536, a power of two, so scaling and unscaling are exact in
float32 and both ranks can be compared with a one-process run at 1e-5).
"""
import functools

import torch
from torch import nn

from grader.checks import seeded
from grader.checks.scenarios import params

__all__ = ["params"]

WORLD = 2  # processes in the gloo group: the grader's (rank 0) and the learner's (rank 1)
GRADER_RANK, LEARNER_RANK = 0, 1  # the learner's is not rank 0: code that clips "on the main process" only shows
# Per rank: two loud windows of three, then a quiet short last window of two.
MICRO_BATCHES, ACCUM_STEPS, MICRO_BATCH_SIZE = 8, 3, 16
LOUD, QUIET = 2.0, 0.2  # the inputs' scale in the full windows and in the last one
MAX_NORM = 0.1
LR, MOMENTUM = 0.1, 0.9
TIMEOUT_S = 15  # a collective that one rank never joins fails after this, instead of hanging


def build_model(seed: int):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16, bias=False), nn.ReLU(), nn.Linear(16, 3, bias=False))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    return model, optimizer, nn.CrossEntropyLoss()


def make_scaler():
    """The GradScaler both ranks use (on the learner's rank, the recording one: install_amp_spies)."""
    return torch.amp.GradScaler("cpu")


def windows() -> list[list[int]]:
    return [list(range(start, min(start + ACCUM_STEPS, MICRO_BATCHES))) for start in range(0, MICRO_BATCHES, ACCUM_STEPS)]


def ends_window(i: int) -> bool:
    return (i + 1) % ACCUM_STEPS == 0 or i + 1 == MICRO_BATCHES


def micro_batches(seed: int):
    """One rank's micro-batches: loud in the full windows, quiet in the last."""
    data, quiet = seeded(seed + 1), set(windows()[-1])
    return [(torch.randn(MICRO_BATCH_SIZE, 8, generator=data) * (QUIET if i in quiet else LOUD),
             torch.randint(0, 3, (MICRO_BATCH_SIZE,), generator=data)) for i in range(MICRO_BATCHES)]


def grad_norm(model: nn.Module) -> float:
    """The total 2-norm of the model's gradients, as clip_grad_norm_ computes it."""
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in model.parameters()
                                                       if p.grad is not None])))


@functools.lru_cache(maxsize=4)  # the checks and the figure ask for the same run
def reference(seed: int, other_seed: int) -> dict:
    """One process, no DDP, no scaler: each window's mean gradient over both ranks' micro-batches, clipped to
    MAX_NORM at its global norm, SGD with momentum. Per window: the weights after its step, its gradient
    norm before and after clipping."""
    model, optimizer, loss_fn = build_model(seed)
    shares = {GRADER_RANK: micro_batches(other_seed), LEARNER_RANK: micro_batches(seed)}
    weights, before, after = [], [], []
    optimizer.zero_grad()
    for window in windows():
        for i in window:
            for rank in range(WORLD):
                x, y = shares[rank][i]
                (loss_fn(model(x), y) / len(window) / WORLD).backward()
        before.append(grad_norm(model))
        torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
        after.append(grad_norm(model))
        optimizer.step()
        optimizer.zero_grad()
        weights.append(params(model))
    return {"weights": weights, "norm_before": before, "norm_after": after}


def size() -> int:
    """How many values the model's gradients hold: the size of every all-reduce either rank makes."""
    return sum(p.numel() for p in build_model(0)[0].parameters())
