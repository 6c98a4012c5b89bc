"""The correct AMP step and its run on an AmpStepTask (mixed-precision/amp-step, amp-clip-step, and the
scaled run fix-underflow draws for its figure). Grading process only (grader/reference/__init__.py)."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from grader.checks.learner.scenarios import AmpStepTask, LossFn, params


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


def amp_step_run(task: AmpStepTask, seed: int, device: str) -> dict[str, list[Any]]:
    """`amp_step` (clipping to `task.max_norm` after unscale_ when set) called on every call of `task`, on
    the same model, data and device as the learner's run: the loss, weights and scale after each call, and
    the gradients' total norm each optimizer step used (None: the step was skipped, inf/NaN gradients)."""
    model, optimizer, loss_fn, batches, _ = task.build(seed, device)
    scaler = torch.amp.GradScaler(device)
    losses, params_after, scale_after, step_norms = [], [], [], []
    used: list[float] = []
    optimizer.register_step_pre_hook(lambda *_: used.append(gradient_norm(model)))
    for i, (x, y, loss_of_call) in enumerate(task.calls_of(batches, loss_fn)):
        if i == task.underflow_call:
            task.start_underflow_call(optimizer)
        used.clear()
        loss = amp_step(model, optimizer, scaler, loss_of_call, x, y, device, task.max_norm)
        losses.append(float(loss))
        params_after.append(params(model))
        scale_after.append(float(scaler.get_scale()))
        step_norms.append(used[0] if used else None)
    return {"losses": losses, "params_after": params_after, "scale_after": scale_after, "step_norms": step_norms}
