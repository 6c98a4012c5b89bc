"""The correct runs on the course's shared tasks (courselib.tasks): an AmpStepTask's (mixed-precision/amp-step,
amp-clip-step, and the scaled run fix-underflow draws for its figure) and an UnderflowTask's float32 run
(fix-underflow, bf16-train). Grading process only, as an exercise's checks/reference.py is: imported by
checks/reference.py and checks/test_*.py, never by what a learner process loads (tests/test_architecture.py:
learner_side_imports), and outside the learner's view (grader/reference/__init__.py says how)."""
from __future__ import annotations

from typing import Any

import torch

from courselib.tasks import AmpStepTask, UnderflowTask
from grader.checks.learner.scenarios import params, plain_step
from grader.reference.amp import amp_step, gradient_norm

__all__ = ["amp_step_run", "fp32_run"]


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


def fp32_run(task: UnderflowTask, seed: int, device: str) -> tuple[list[float], float]:
    """The same training in float32 (`plain_step`, `task.steps` times): the loss of each step, and the
    final loss."""
    model, optimizer, loss_fn, x, y = task.build(seed, device)
    losses = [float(plain_step(model, optimizer, loss_fn, x, y)) for _ in range(task.steps)]
    return losses, task.final_loss(model, x, y)
