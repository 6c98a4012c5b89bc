"""The stop-recompiling task: a one-layer causal attention model trained on batches whose sequence length
changes every step, with a label smoothing that decays every step (a Python float the loop hands the loss).

Built identically in the learner's process (probe) and the grading process (reference.py): the model, the
lengths and the tokens from the run's seed. Nothing here computes a loss: the original's run is
reference.py's, on the grading side only.
"""
import torch
from torch import nn

from grader.checks import seeded
from grader.checks.learner.scenarios import params

VOCAB, DIM, BATCH = 32, 16, 4
LR = 0.1
STEPS = 12
# Every step's length differs from every other's, and so does its smoothing: a function that compiles once per
# length or once per smoothing value compiles 12 times, past dynamo's recompile limit (8 by default), and its
# last 4 steps run in eager. Lengths from 2 on: 0 and 1 are sizes dynamo always specializes.
SHORTEST, LONGEST = 6, 40
SMOOTHING_START = 0.2  # decays linearly towards 0, never reaching it


def smoothing(step: int) -> float:
    """The label smoothing the loop hands compute_loss on step `step` (0-based): a Python float, new each step."""
    return SMOOTHING_START * (1 - step / STEPS)


class TinyAttention(nn.Module):
    """The learner's compute_loss reads `embed` and `head`; it has no forward of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.head = nn.Linear(DIM, VOCAB)


def build(seed: int, device: str):
    """The model, its optimizer and each step's batch of tokens (batch, length), lengths all different."""
    data = seeded(seed)
    model = TinyAttention().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    lengths = (torch.randperm(LONGEST - SHORTEST + 1, generator=data)[:STEPS] + SHORTEST).tolist()
    # The longest batch comes last: a mask cache that grows to the longest length seen so far must grow after
    # dynamo has made the length symbolic, on every seed.
    lengths.append(lengths.pop(lengths.index(max(lengths))))
    batches = [torch.randint(0, VOCAB, (BATCH, length), generator=data).to(device) for length in lengths]
    return model, optimizer, batches


def train(compute_loss, model, optimizer, batches, weights=None):
    """The loop both sides run: one step per batch, compute_loss(model, tokens, smoothing); returns each step's
    loss (a number, or None where compute_loss returned no one-number loss with a gradient, which ends the run),
    and appends the weights after each step to `weights` when given."""
    losses = []
    for step, tokens in enumerate(batches):
        optimizer.zero_grad()
        loss = compute_loss(model, tokens, smoothing(step))
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
            losses.append(None)
            break
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        if weights is not None:
            weights.append(params(model))
    return losses
