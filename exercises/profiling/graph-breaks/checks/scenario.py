"""The graph-breaks task: a small classifier whose loss function logs with `.item()` and `print` and adds a
z-loss behind a data-dependent `if`.

Built identically in the learner's process (probe) and the grader's (checks). `original_compute_loss` is the
starter's computation (its logging left out: it computes nothing): the grader's copy of the original.
"""
import torch
import torch.nn.functional as F
from torch import nn

from grader.checks import seeded
from grader.checks.scenarios import params

FEATURES, HIDDEN, CLASSES, BATCH = 16, 32, 5, 64
LR, MOMENTUM = 0.1, 0.9
Z_WEIGHT, Z_MAX = 0.01, 4.0  # as in the starter
# The batches' input scales: small inputs keep the z-loss under Z_MAX, large ones push it over, so the
# steps take both sides of the original's `if` (measured over 134 seeds: at most 3.1 on the small batches, at least 7.0 on the first large one).
SCALES = (0.5, 16.0, 0.5, 16.0)
STEPS = len(SCALES)


def build(seed: int, device: str):
    data = seeded(seed)
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    batches = [((scale * torch.randn(BATCH, FEATURES, generator=data)).to(device),
                torch.randint(0, CLASSES, (BATCH,), generator=data).to(device)) for scale in SCALES]
    return model, optimizer, batches


def original_compute_loss(model, x, y):
    """The starter's compute_loss, without its print (which computes nothing)."""
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    if z_loss > Z_MAX:
        loss = loss + Z_WEIGHT * z_loss
    return loss


def z_losses(model, batches):
    """Each batch's z-loss at the current weights (the grading side's, for its messages)."""
    with torch.no_grad():
        return [float(torch.logsumexp(model(x), dim=-1).pow(2).mean()) for x, _ in batches]


def train(compute_loss, model, optimizer, batches, weights=None):
    """The loop both sides run: one step per batch; returns each step's loss (a number or None), and appends
    the weights after each step to `weights` when given."""
    losses = []
    for x, y in batches:
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


def reference(seed: int, device: str):
    """The original's run: each step's loss, its z-loss before the step, and the weights after each step."""
    model, optimizer, batches = build(seed, device)
    zs, losses, weights = [], [], []
    for x, y in batches:
        zs.append(z_losses(model, [(x, y)])[0])
        losses += train(original_compute_loss, model, optimizer, [(x, y)], weights)
    return {"losses": losses, "z_losses": zs, "weights": weights}
