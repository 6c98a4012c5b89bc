"""The ddp-clip task: each of 2 ranks gets its own micro-batches of one shared classification task, and
every window's update is clipped.

Built identically in the learner's process (rank 1, the probe), the grader's own rank 0 (grader_rank.py,
sent to it by the referee) and the checks: the run's seed gives both ranks the same initial model; each
rank's micro-batches come from a seed of its own (rank 0's is drawn by the grading side and never told to
the learner's process). What a correct run ends with is computed in the grading process only
(reference.py), never here: this module is loaded in the learner's process.

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

One of the two full windows overflows (SPIKE, in the grader's rank's data, at a micro-batch the referee
draws from `secrets`): a correct step through scaler.step skips it and scaler.update halves the scale, so
the learner's process cannot know in advance which window a GradScaler must skip, and a step that
bypasses scaler.step turns the weights non-finite there.
"""
import torch
from torch import nn

from grader.checks import seeded
from grader.checks.learner.ddp import GRADER_RANK, LEARNER_RANK, WORLD
from grader.checks.learner.scenarios import params

__all__ = ["params", "GRADER_RANK", "LEARNER_RANK", "WORLD"]

# Per rank: two loud windows of three, then a quiet short last window of two.
MICRO_BATCHES, ACCUM_STEPS, MICRO_BATCH_SIZE = 8, 3, 16
LOUD, QUIET = 2.0, 0.2  # the inputs' scale in the full windows and in the last one
MAX_NORM = 0.1
LR, MOMENTUM = 0.1, 0.9
INIT_SCALE = 65536.0  # GradScaler's initial scale; an overflowing step halves it
# One micro-batch of the grader's rank, in one of the two full windows (which: the referee's secret), has
# inputs SPIKE times larger: a loss spike whose gradient (largest value 4e34-1.3e35, finite, on 40 seeds
# measured) the loss scale carries past float32's range (3.4e38, 8x or more), so the all-reduced gradient of
# that window is inf on both ranks.
SPIKE = 1e36


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


def micro_batches(seed: int, spike: int | None = None):
    """One rank's micro-batches: loud in the full windows, quiet in the last; micro-batch `spike` (the grader's
    rank's only) SPIKE times louder."""
    data, quiet = seeded(seed + 1), set(windows()[-1])
    return [(torch.randn(MICRO_BATCH_SIZE, 8, generator=data) * (QUIET if i in quiet else LOUD) * (SPIKE if i == spike else 1),
             torch.randint(0, 3, (MICRO_BATCH_SIZE,), generator=data)) for i in range(MICRO_BATCHES)]


def window_of(i: int) -> int:
    return next(j for j, window in enumerate(windows()) if i in window)


def grad_norm(model: nn.Module) -> float:
    """The total 2-norm of the model's gradients, as clip_grad_norm_ computes it."""
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in model.parameters()
                                                       if p.grad is not None])))


def size() -> int:
    """How many values the model's gradients hold: the size of every all-reduce either rank makes."""
    return sum(p.numel() for p in build_model(0)[0].parameters())
