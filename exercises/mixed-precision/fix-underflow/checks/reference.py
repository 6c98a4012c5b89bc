"""The grading side's correct runs (grading process only: never imported by probe.py or scenario.py, so no
learner process can import, read or reach them; grader/reference/__init__.py): the same training in
float32, and a correct fp16 run with a GradScaler."""
import torch

import scenario
from grader.reference.amp import amp_step
from courselib.reference import fp32_run as task_fp32_run


def fp32_run(seed: int, device: str) -> tuple[list[float], float]:
    """The same training in float32: the loss of each step, and the final loss."""
    return task_fp32_run(scenario.TASK, seed, device)


def correct_scaled_zero_fractions(seed: int, device: str) -> list[float]:
    """The zero fraction of the gradients the optimizer sees in each step of a correct fp16 run with a
    GradScaler (the solution's loop), measured here: what "fixed" looks like."""
    model, optimizer, loss_fn, x, y = scenario.TASK.build(seed, device)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    scaler, fractions, step = torch.amp.GradScaler(device), [], optimizer.step

    def measured_step(*args, **kwargs):
        grads = torch.cat([p.grad.detach().reshape(-1) for p in params if p.grad is not None])
        fractions.append(float(grads.eq(0).sum()) / grads.numel())
        return step(*args, **kwargs)
    optimizer.step = measured_step
    for _ in range(scenario.STEPS):
        amp_step(model, optimizer, scaler, loss_fn, x, y, device)
    return fractions
