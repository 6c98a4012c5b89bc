"""Spies for gradient accumulation, on top of the AMP spies in amp.py.

Two facts the AMP event log does not hold: how much each backward call propagated relative to the loss
the loss function returned (that ratio reveals the loss scale and the accumulation divisor), and which
gradients and weights each real optimizer step saw (so the checks can recompute the large-batch
gradient at those weights). Both are added to `amp.RECORDER.events`, in the learner's process.
"""
from __future__ import annotations

from typing import Any

import torch

from grader.harness import amp
from grader.harness.amp import RECORDER


def _value(tensor: Any) -> float | None:
    if isinstance(tensor, torch.Tensor) and tensor.numel() == 1:
        return float(tensor.detach().float())
    return None


def _annotate_backward(first_new_index: int, target: Any) -> None:
    """Add the backward target's value, the last loss and the current scale to amp's backward event."""
    for event in RECORDER.events[first_new_index:]:
        if event["event"] == "backward":
            scaler = RECORDER.scalers[-1] if RECORDER.scalers else None
            RECORDER.amend(event, value=_value(target),
                           loss=RECORDER.last_loss_value(),
                           scale=float(scaler.get_scale()) if scaler is not None and scaler.is_enabled() else None)
            return


def install() -> type:
    """amp.install(), then record the value each top-level backward call starts from."""
    scaler_class = amp.install()
    tensor_backward, autograd_backward = torch.Tensor.backward, torch.autograd.backward

    def backward(self, *args, **kwargs):  # noqa: ANN001 - takes what torch's own method takes
        start = len(RECORDER.events)
        nested = RECORDER.in_backward > 0
        result = tensor_backward(self, *args, **kwargs)
        if not nested:
            _annotate_backward(start, self)
        return result

    def autograd_backward_patched(tensors, *args, **kwargs):  # noqa: ANN001 - takes what torch's own method takes
        start = len(RECORDER.events)
        nested = RECORDER.in_backward > 0
        result = autograd_backward(tensors, *args, **kwargs)
        if not nested:
            first = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else tensors
            _annotate_backward(start, first)
        return result

    torch.Tensor.backward = backward
    torch.autograd.backward = autograd_backward_patched
    return scaler_class


def watch_step_gradients(optimizer: torch.optim.Optimizer, model: torch.nn.Module) -> torch.optim.Optimizer:
    """Record the gradients and weights every real optimizer step sees (call after amp.watch_optimizer)."""
    inner_step = optimizer.step

    def step(*args, **kwargs):
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


def divisor(event: dict[str, Any], max_divisor: int = 64) -> tuple[str, int | None, float | None]:
    """Classify a recorded backward: ('scaled' | 'raw' | 'other', the whole number the loss was divided
    by, the ratio of the backward target to the loss).

    A correct accumulation step backpropagates scale * loss / k, where k is the window's size.
    """
    value, loss, scale = event.get("value"), event.get("loss"), event.get("scale")
    if value is None or not loss:
        return "other", None, None
    ratio = value / loss
    if ratio == 0:
        return "other", None, ratio
    candidates = [("scaled", scale / ratio)] if scale else []
    candidates.append(("raw", 1.0 / ratio))
    for kind, k in candidates:
        nearest = round(k)
        if 1 <= nearest <= max_divisor and abs(k - nearest) <= 1e-3 * nearest:
            return kind, nearest, ratio
    return "other", None, ratio
