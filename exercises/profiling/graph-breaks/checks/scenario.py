"""The graph-breaks task: a small classifier whose loss function logs with `.item()` and `print` and adds a
z-loss behind a data-dependent `if` on the batch's mean z-loss.

Built identically in the learner's process (probe) and the grading process (reference.py): the model from the
run's seed, and each step's batch drawn from the seed and shaped at the weights the step starts from, so that
its rows' z-losses lie on both sides of Z_MAX (below). Nothing here computes a loss: the original's run is
reference.py's, on the grading side only.
"""
import torch
from torch import nn

from grader.checks import seeded
from grader.checks.learner.scenarios import params

FEATURES, HIDDEN, CLASSES, BATCH = 16, 32, 5, 64
LR, MOMENTUM = 0.1, 0.9
Z_WEIGHT, Z_MAX = 0.01, 4.0  # as in the starter
# The labels of the probe's marks, each graph and break streamed as dynamo makes it; the checks read them.
BREAK_MARK, GRAPH_MARK, DONE_MARK = "dynamo.break", "dynamo.graph", "dynamo.done"
TRACE_TIME_MARK = "dynamo.comptime"  # a torch._dynamo.comptime call: the learner's code run while dynamo traced
# Which side of Z_MAX each step's batch mean z-loss is on, so the original's `if` goes both ways. Every batch
# also has OUTLIERS rows on the other side on their own: thresholding each row's z-loss instead of the batch
# mean then always computes another loss. Under-steps: rows at SMALL scale (a z-loss near its value at zero
# input, 2.6-3.8 measured) but OUTLIERS rows moved toward the batch's highest-z-loss candidate row until theirs
# is UNDER_STEP_OUTLIER_Z; over-steps: rows moved that way until theirs is at least OVER_STEP_Z, but OUTLIERS
# rows at TINY scale (near the zero-input value). reference.py asserts this on its own run of each seed,
# tests/integrity/test_graph_breaks_attacks.py on 50 seeds.
SIDES = ("under", "over", "under", "over")
STEPS = len(SIDES)
SMALL, LARGE, TINY = 0.5, 16.0, 0.05
OUTLIERS = 4
UNDER_STEP_OUTLIER_Z, OVER_STEP_Z = 1.5 * Z_MAX, 2 * Z_MAX
CANDIDATES = 64  # LARGE-scale rows drawn per batch; rows are moved toward the one with the highest z-loss
BISECTIONS = 30  # halvings of the way to it: past float32's spacing near 1 (2**-24), the rest would change nothing


def build(seed: int, device: str):
    """The model, its optimizer, and the generator each step's batch is drawn from."""
    data = seeded(seed)
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    return model, optimizer, data


def row_z_losses(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Each row's z-loss on its own (its logits' squared log-sum-exp) at the model's current weights."""
    with torch.no_grad():
        return torch.logsumexp(model(x), dim=-1).pow(2)


def _moved_to(model: nn.Module, rows: torch.Tensor, toward: torch.Tensor, target: float) -> torch.Tensor:
    """Each row moved along the straight way to `toward` (whose z-loss is over `target`) until its z-loss is over
    `target`: where it is under, to where it crosses `target` (bisection), else hardly at all. Continuous in the
    weights, so two runs whose weights agree to rounding get the same rows to rounding too."""
    low = torch.zeros(len(rows), 1, device=rows.device)
    high = torch.ones_like(low)
    for _ in range(BISECTIONS):
        middle = (low + high) / 2
        over = (row_z_losses(model, rows + middle * (toward - rows)) > target).unsqueeze(1)
        high, low = torch.where(over, middle, high), torch.where(over, low, middle)
    return rows + high * (toward - rows)


def batch(model: nn.Module, step: int, data: torch.Generator, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Step `step`'s batch (0-based), at the weights the step starts from: the batch mean z-loss on SIDES[step]
    of Z_MAX, its first OUTLIERS rows on the other side."""
    directions = torch.randn(BATCH, FEATURES, generator=data).to(device)
    y = torch.randint(0, CLASSES, (BATCH,), generator=data).to(device)
    candidates = LARGE * torch.randn(CANDIDATES, FEATURES, generator=data).to(device)
    highest = candidates[int(row_z_losses(model, candidates).argmax())]
    if SIDES[step] == "over":
        x = _moved_to(model, LARGE * directions, highest, OVER_STEP_Z)
        x[:OUTLIERS] = TINY * directions[:OUTLIERS]
    else:
        x = SMALL * directions
        x[:OUTLIERS] = _moved_to(model, x[:OUTLIERS], highest, UNDER_STEP_OUTLIER_Z)
    return x, y


def train(compute_loss, model, optimizer, data, device, weights=None, batches=None):
    """The loop both sides run: one step per entry of SIDES, each on its batch drawn at the step's starting
    weights; returns each step's loss (a number or None), and appends the weights after each step to `weights`
    and each batch to `batches` when given."""
    losses = []
    for step in range(STEPS):
        x, y = batch(model, step, data, device)
        if batches is not None:
            batches.append((x, y))
        optimizer.zero_grad()
        loss = compute_loss(model, x, y)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
            losses.append(None)
            break
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        if weights is not None:
            weights.append(params(model))
    return losses
