"""The probe of an AmpStepTask (courselib.tasks), for mixed-precision/amp-step and amp-clip-step: the learner's
(confined) process, like the checks/probe.py that calls it; it returns observations, never a verdict. Call
install_amp_spies() first, in prepare()."""
from __future__ import annotations

import math
from typing import Any

import torch

from courselib.tasks import AmpStepTask
from grader.checks.learner.probing import RECORDER, ProbeAPI, watch_loss, watch_model, watch_optimizer
from grader.checks.learner.scenarios import params

__all__ = ["amp_step_probe"]


def _amp_step_number(value: Any) -> float | None:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.detach().float())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def amp_step_probe(api: ProbeAPI, task: AmpStepTask) -> dict[str, list[Any]]:
    """Call the learner's train_step once per call of `task` (`task.calls_of`), on one model, optimizer and
    GradScaler, marking each call (`RECORDER.mark("call")`, for `judging.calls`), with the task's stale
    gradients planted first and `task.max_norm` passed last when the task has one.

    A call that raises (e.g. scaler.step after a raw backward) is itself what the checks judge: it is
    recorded and the calls go on. Returns, per call, the returned number (`returns`, NaN for inf/NaN,
    None for anything but one number), its type's name (`returned_types`), the weights after it
    (`params_after`), the scaler's scale after it (`scale_after`) and its error or None (`errors`)."""
    model, optimizer, loss_fn, batches, stale = task.build(api.seed, api.device)
    # Gradients left over from "a previous step": a step that forgets zero_grad adds to them.
    for p, g in zip(model.parameters(), stale):
        p.grad = g.clone()
    watch_model(model)
    watch_optimizer(optimizer)
    scaler = torch.amp.GradScaler(api.device)
    returns, returned_types, params_after, scale_after, errors = [], [], [], [], []
    extra = () if task.max_norm is None else (task.max_norm,)
    for i, (x, y, loss) in enumerate(task.calls_of(batches, loss_fn, watch_loss)):
        if i == task.underflow_call:
            task.start_underflow_call(optimizer)
        RECORDER.mark("call")
        value, error = api.try_call(model, optimizer, scaler, loss, x, y, *extra)
        errors.append(error)
        number = _amp_step_number(value)
        returns.append(number if number is None or math.isfinite(number) else float("nan"))
        returned_types.append(type(value).__name__)
        params_after.append(params(model))
        scale_after.append(float(scaler.get_scale()))
    return {"returns": returns, "returned_types": returned_types,
            "params_after": params_after, "scale_after": scale_after, "errors": errors}
