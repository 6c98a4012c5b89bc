"""Runs in the learner's process: call train_step (with the clipping threshold) on the scenario and record what it does."""
import math

import torch

import scenario
from grader.checks.probing import RECORDER, install_amp_spies, watch_loss, watch_model, watch_optimizer


def prepare():
    install_amp_spies()


def _as_number(value):
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.detach().float())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def probe(api):
    model, optimizer, loss_fn, batches, stale = scenario.build(api.seed, api.device)
    # Gradients left over from "a previous step": a step that forgets zero_grad adds to them.
    for p, g in zip(model.parameters(), stale):
        p.grad = g.clone()
    watch_model(model)
    watch_optimizer(optimizer)
    scaler = torch.amp.GradScaler(api.device)
    watched_loss = watch_loss(loss_fn)
    returns, returned_types, params_after, scale_after, errors = [], [], [], [], []
    calls = [(x, y, watched_loss) for x, y in batches] + [(*batches[0], watch_loss(scenario.tiny(loss_fn)))]
    for i, (x, y, loss) in enumerate(calls):
        if i == scenario.UNDERFLOW_CALL:
            scenario.start_underflow_call(optimizer)
        RECORDER.mark("call")
        # A call that raises (e.g. scaler.step after a raw backward) is itself what the checks judge:
        # record it and go on, so every check can say what happened.
        value, error = api.try_call(model, optimizer, scaler, loss, x, y, scenario.MAX_NORM)
        errors.append(error)
        number = _as_number(value)
        returns.append(number if number is None or math.isfinite(number) else float("nan"))
        returned_types.append(type(value).__name__)
        params_after.append(scenario.params(model))
        scale_after.append(float(scaler.get_scale()))
    return {"returns": returns, "returned_types": returned_types,
            "params_after": params_after, "scale_after": scale_after, "errors": errors}
