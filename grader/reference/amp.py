"""The correct AMP step, and the gradients' norm it used: grading process only (grader/reference/__init__.py).
Its runs on the course's tasks are the course's (exercises/_library/: courselib.reference)."""
from __future__ import annotations

import torch
from torch import nn

from grader.checks.learner.scenarios import LossFn


def amp_step(model: nn.Module, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler, loss_fn: LossFn,
             x: torch.Tensor, y: torch.Tensor, device: str, max_norm: float | None = None) -> torch.Tensor:
    """The correct AMP step: zero_grad, forward and loss under float16 autocast, backward on the scaled
    loss, then (with `max_norm`) scaler.unscale_ and clip_grad_norm_, then scaler.step and scaler.update.
    Returns the loss (float16, as autocast computed it)."""
    optimizer.zero_grad()
    with torch.autocast(device_type=device, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    if max_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss


def gradient_norm(model: nn.Module) -> float:
    """The total 2-norm of the model's gradients, as clip_grad_norm_ computes it."""
    return float(torch.nn.utils.get_total_norm([p.grad.detach().float() for p in model.parameters()
                                                  if p.grad is not None]))
