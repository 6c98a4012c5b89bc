"""Scenario pieces that several exercises share: the same model and data from the same seed, on both sides. An
exercise's `checks/scenario.py` takes what it shares from here and keeps only what is its own:

    params(model)                        the weights as float32 CPU copies, by parameter name
    scaled_loss(loss_fn, factor)         a loss `factor` times loss_fn's (a loss whose fp16 gradients underflow)
    plain_step(...)                      one float32 training step, as a starter writes it

Everything here runs on both sides (the probe in the learner's process, the checks in the grading process),
and nothing here computes a right answer. Tasks that exercises of one lesson share are the course's, not the
platform's (exercises/_library/: courselib.tasks).
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

__all__ = ["params", "scaled_loss", "plain_step", "Batch", "LossFn"]

Batch = tuple[torch.Tensor, torch.Tensor]
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def params(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's weights as float32 CPU copies, by parameter name (what a probe returns, what a check
    compares)."""
    return {name: p.detach().float().cpu().clone() for name, p in model.named_parameters()}


def scaled_loss(loss_fn: LossFn, factor: float) -> LossFn:
    """A loss `factor` times `loss_fn`'s: with a factor of 1e-6 (and the learning rate raised to match) its
    float16 gradients underflow to zero unless the loss is scaled first."""
    def tiny_loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return factor * loss_fn(output, target)

    return tiny_loss


def plain_step(model: nn.Module, optimizer: torch.optim.Optimizer, loss_fn: LossFn, x: torch.Tensor,
               y: torch.Tensor) -> torch.Tensor:
    """One float32 training step, as a starter writes it: zero_grad, forward, loss, backward, step. Returns
    the loss, detached."""
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()
