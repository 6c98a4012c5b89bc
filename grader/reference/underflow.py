"""The float32 run an UnderflowTask's training is held against (mixed-precision/fix-underflow,
bf16-train). Grading process only (grader/reference/__init__.py)."""
from __future__ import annotations

from grader.checks.learner.scenarios import UnderflowTask, plain_step


def fp32_run(task: UnderflowTask, seed: int, device: str) -> tuple[list[float], float]:
    """The same training in float32 (`plain_step`, `task.steps` times): the loss of each step, and the
    final loss."""
    model, optimizer, loss_fn, x, y = task.build(seed, device)
    losses = [float(plain_step(model, optimizer, loss_fn, x, y)) for _ in range(task.steps)]
    return losses, task.final_loss(model, x, y)
