"""Spies for gradient accumulation, on top of the AMP spies in amp.py.

Two facts the AMP event log does not hold: how much each backward call propagated relative to the loss
the loss function returned (that ratio reveals the loss scale and the accumulation divisor), and which
gradients and weights each real optimizer step saw (so the checks can recompute the large-batch
gradient at those weights). Both are recorded in `amp.RECORDER.events`, in the learner's process, as
part of the event when it happens.
"""
from __future__ import annotations

from typing import Any

import torch

from grader.learner import amp
from grader.learner.recorder import RECORDER


def _value(tensor: Any) -> float | None:
    if isinstance(tensor, torch.Tensor) and tensor.numel() == 1:
        return float(tensor.detach().float())
    return None


def _backward_details(target: Any) -> dict[str, Any]:
    """The backward target's value, the last loss and the current scale, for amp's backward event: all
    known before the backward runs, so the event is complete when it is streamed."""
    scaler = RECORDER.scalers[-1] if RECORDER.scalers else None
    return {"value": _value(target), "loss": RECORDER.last_loss_value(),
            "scale": float(scaler.get_scale()) if scaler is not None and scaler.is_enabled() else None}


def install() -> type:
    """amp.install(), and every top-level backward event also records the value it starts from."""
    scaler_class = amp.install()
    RECORDER.backward_details = _backward_details
    return scaler_class


def watch_step_gradients(optimizer: torch.optim.Optimizer, model: torch.nn.Module) -> torch.optim.Optimizer:
    """Record the gradients and weights every real optimizer step sees (call after amp.watch_optimizer)."""
    inner_step = optimizer.step

    def step(*args: Any, **kwargs: Any) -> Any:
        RECORDER.add(
            "optimizer.grads",
            via_scaler=RECORDER.in_scaler_step > 0,
            grads={n: None if p.grad is None else p.grad.detach().float().cpu().clone()
                   for n, p in model.named_parameters()},
            params={n: p.detach().float().cpu().clone() for n, p in model.named_parameters()},
        )
        return inner_step(*args, **kwargs)

    optimizer.step = step
    return optimizer
