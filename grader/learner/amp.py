"""Spies that watch a learner's mixed-precision code while it runs.

A probe (an exercise's `checks/probe.py`, run in the learner's process) wraps the objects it hands to the
learner's function: the model, the optimizer, the loss function and the GradScaler. Each call the learner
makes is recorded in the one event log (recorder.py) with the submission line that made it, and streamed to
the grading process as it happens (channel.py), so the checks (run there, afterwards) judge what happened, not
what the source text says, and not what the learner's code left in this process's lists.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from grader.learner.emulation import amp_device, install_cuda_emulation
from grader.learner.recorder import RECORDER, submission_line


def autocast_state() -> tuple[bool, str | None]:
    device = amp_device()
    if not torch.is_autocast_enabled(device):
        return False, None
    return True, str(torch.get_autocast_dtype(device)).replace("torch.", "")


def classify_backward_target(tensor: torch.Tensor) -> tuple[str, float | None]:
    """'scaled' when backward runs on the scaler's output, 'raw' on the loss itself, 'twice' on a
    loss scaled twice (scaler.scale(scaler.scale(loss)))."""
    loss = RECORDER.last_loss_value()
    value = float(tensor.detach().float()) if tensor.numel() == 1 else None
    ratio = value / loss if loss and value is not None and math.isfinite(loss) and math.isfinite(value) else None
    scale = float(RECORDER.scalers[-1].get_scale()) if RECORDER.scalers else None
    if any(tensor is t for t in RECORDER.scaled):
        if ratio and scale and scale > 1 and abs(ratio - scale * scale) <= 1e-2 * scale * scale:
            return "twice", ratio
        return "scaled", ratio
    if any(tensor is t for t in RECORDER.losses):
        return "raw", 1.0
    # Not the same object (e.g. `scaler.scale(loss) * 1`): compare values with the last loss.
    if ratio is None:
        return "other", None
    if scale and abs(ratio - scale) <= 1e-2 * scale:
        return "scaled", ratio
    if abs(ratio - 1.0) <= 1e-2:
        return "raw", ratio
    return "other", ratio


def _make_recording_scaler() -> type:
    base: Any = torch.amp.GradScaler  # Any: torch is not followed by the type checker

    class RecordingGradScaler(base):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            RECORDER.scalers.append(self)
            RECORDER.add("scaler.init", enabled=self.is_enabled(), scale=getattr(self, "_init_scale", None))

        def scale(self, outputs: Any) -> Any:  # takes what torch's own method takes
            RECORDER.add("scaler.scale")
            out = super().scale(outputs)
            if isinstance(out, torch.Tensor):
                RECORDER.scaled.append(out)
            return out

        def unscale_(self, optimizer: Any) -> Any:  # takes what torch's own method takes
            RECORDER.add("scaler.unscale_", internal=RECORDER.in_scaler_step > 0)
            return super().unscale_(optimizer)

        def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:  # takes what torch's own method takes
            RECORDER.add("scaler.step", scale=float(self.get_scale()) if self.is_enabled() else None)
            RECORDER.in_scaler_step += 1
            try:
                return super().step(optimizer, *args, **kwargs)
            finally:
                RECORDER.in_scaler_step -= 1

        def update(self, new_scale: Any = None) -> Any:  # takes what torch's own method takes
            before = float(self.get_scale()) if self.is_enabled() else None
            result = super().update(new_scale)
            after = float(self.get_scale()) if self.is_enabled() else None
            RECORDER.add("scaler.update", scale_before=before, scale_after=after)
            return result

    RecordingGradScaler.__name__ = "GradScaler"
    RecordingGradScaler.__qualname__ = "GradScaler"
    return RecordingGradScaler


def _patch_backward() -> None:
    tensor_backward = torch.Tensor.backward
    autograd_backward = torch.autograd.backward

    def record(target: Any) -> None:
        on, ratio = ("other", None)
        if isinstance(target, torch.Tensor):
            on, ratio = classify_backward_target(target)
        enabled, dtype = autocast_state()
        details = RECORDER.backward_details(target) if RECORDER.backward_details is not None else {}
        RECORDER.add("backward", on=on, ratio=ratio, autocast=enabled, autocast_dtype=dtype,
                     grads_clear=RECORDER.grads_clear(), **details)

    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:  # takes what torch's own method takes
        if RECORDER.in_backward:
            return tensor_backward(self, *args, **kwargs)
        record(self)
        RECORDER.in_backward += 1
        try:
            return tensor_backward(self, *args, **kwargs)
        finally:
            RECORDER.in_backward -= 1

    def autograd_backward_patched(tensors: Any, *args: Any, **kwargs: Any) -> Any:  # what torch's own one takes
        if RECORDER.in_backward:
            return autograd_backward(tensors, *args, **kwargs)
        first = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else tensors
        record(first)
        RECORDER.in_backward += 1
        try:
            return autograd_backward(tensors, *args, **kwargs)
        finally:
            RECORDER.in_backward -= 1

    torch.Tensor.backward = backward
    torch.autograd.backward = autograd_backward_patched


def _patch_clipping() -> None:
    """Record each gradient clipping call and whether the scaler had unscaled the gradients first: clipping
    scaled gradients (before scaler.unscale_) clips them 65536 times too hard."""
    import torch.nn.utils.clip_grad as clip_grad

    def watched(name: str) -> Callable[..., Any]:
        inner = getattr(clip_grad, name)

        def clip(*args: Any, **kwargs: Any) -> Any:
            since = RECORDER.events[_last_backward_index() + 1:]
            unscaled = any(e["event"] == "scaler.unscale_" and not e.get("internal") for e in since)
            RECORDER.add("clip", function=name, after_unscale=unscaled)
            return inner(*args, **kwargs)

        clip.__name__ = clip.__qualname__ = name
        return clip

    for name in ("clip_grad_norm_", "clip_grad_value_"):
        function = watched(name)
        setattr(clip_grad, name, function)
        setattr(torch.nn.utils, name, function)


def _last_backward_index() -> int:
    for event in reversed(RECORDER.events):
        if event["event"] == "backward":
            index: int = event["index"]
            return index
    return -1


def _patch_weight_casts() -> None:
    """Remember the submission line that cast a model's weights to 16 bits (model.half(), .to(torch.float16)):
    the error PyTorch raises for it comes later, from scaler.step, and names neither the cast nor its line."""
    def watched(original: Callable[..., Any]) -> Callable[..., Any]:
        def cast(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            line = submission_line()
            if line is not None and _weights_dtype(self) in ("float16", "bfloat16"):
                RECORDER.weights_cast = (line, f"{original.__name__}()", _weights_dtype(self))
            return result

        cast.__name__ = cast.__qualname__ = original.__name__
        return cast

    for name in ("half", "bfloat16", "to", "type"):
        setattr(torch.nn.Module, name, watched(getattr(torch.nn.Module, name)))


def install() -> type:
    """Patch torch in this (learner) process; returns the recording GradScaler class."""
    scaler_class = _make_recording_scaler()
    install_cuda_emulation(scaler_class)
    _patch_backward()
    _patch_clipping()
    _patch_weight_casts()
    recording: type = torch.amp.GradScaler  # the recording class, or the emulation's subclass of it
    return recording


def watch_model(model: torch.nn.Module) -> torch.nn.Module:
    RECORDER.params.extend(p for p in model.parameters())

    opened: list[dict[str, Any]] = []  # the forward event of a model(x) call in progress, while no layer has started
    # model.half() and .to(dtype) convert a parameter in place (the same object): its dtype is read per call.
    first = next((p for p in model.parameters() if p.is_floating_point()), None)

    def before(_module: Any, _inputs: Any) -> None:  # a torch forward hook's arguments
        enabled, dtype = autocast_state()
        weights = None if first is None else str(first.dtype).replace("torch.", "")
        event = RECORDER.add("forward", autocast=enabled, autocast_dtype=dtype, weights_dtype=weights)
        opened[:] = [] if enabled else [event]

    def layer_started(_module: Any, _inputs: Any) -> None:  # a torch forward hook's arguments
        # Autocast entered inside model.forward (a patched forward, accelerate's prepare) is on here.
        if opened and RECORDER.events and RECORDER.events[-1] is opened[0]:
            RECORDER.amend(opened.pop(), inner_autocast=autocast_state()[1])

    def after(_module: Any, _inputs: Any, output: Any) -> None:  # a torch forward hook's arguments
        opened.clear()
        if isinstance(output, torch.Tensor) and RECORDER.events and RECORDER.events[-1]["event"] == "forward":
            RECORDER.amend(RECORDER.events[-1], output_dtype=str(output.dtype).replace("torch.", ""))

    model.register_forward_pre_hook(before)
    for layer in list(model.modules())[1:]:
        layer.register_forward_pre_hook(layer_started)
    model.register_forward_hook(after)
    return model


def _weights_dtype(model: torch.nn.Module) -> str | None:
    floating = (p for p in model.parameters() if p.is_floating_point())
    first = next(floating, None)
    return None if first is None else str(first.dtype).replace("torch.", "")


def zero_grad_fraction(params: list[torch.Tensor]) -> float | None:
    """The fraction of gradient values that are exactly zero: underflow's fingerprint."""
    grads = [p.grad.detach().reshape(-1) for p in params if p.grad is not None]
    if not grads:
        return None
    flat = torch.cat(grads)
    return float(flat.eq(0).sum()) / int(flat.numel())


def watch_optimizer(optimizer: torch.optim.Optimizer, measure_zero_grads: bool = False) -> torch.optim.Optimizer:
    """Record step/zero_grad; with `measure_zero_grads`, the zero fraction of the gradients each step sees."""
    step, zero_grad = optimizer.step, optimizer.zero_grad
    params = [p for group in optimizer.param_groups for p in group["params"]]

    def recorded_step(*args: Any, **kwargs: Any) -> Any:
        fraction = {"zero_grad_fraction": zero_grad_fraction(params)} if measure_zero_grads else {}
        RECORDER.add("optimizer.step", via_scaler=RECORDER.in_scaler_step > 0, **fraction)
        return step(*args, **kwargs)

    def recorded_zero_grad(*args: Any, **kwargs: Any) -> Any:
        RECORDER.add("optimizer.zero_grad")
        return zero_grad(*args, **kwargs)

    optimizer.step = recorded_step
    optimizer.zero_grad = recorded_zero_grad
    # torch wraps the optimizer *class's* step so that step hooks run for every real step, also for
    # `type(optimizer).step(optimizer)`, which the instance attribute above never sees.
    optimizer.register_step_pre_hook(_record_class_step)
    return optimizer


def _record_class_step(optimizer: torch.optim.Optimizer, *_: object) -> None:
    # Returns None: a pre-hook that returns something would change step's args.
    RECORDER.add("optimizer.class_step", grad_norm=_grad_norm(optimizer))


def _grad_norm(optimizer: torch.optim.Optimizer) -> float | None:
    """The total 2-norm of the gradients this step is about to use (as clip_grad_norm_ computes it), or
    None when there are none or it is not finite: what clipping did, however it was written."""
    grads = [p.grad.detach().float() for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    if not grads:
        return None
    norm = float(torch.nn.utils.get_total_norm(grads))
    return norm if math.isfinite(norm) else None


def watch_loss(loss_fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def recorded_loss(*args: Any, **kwargs: Any) -> Any:
        enabled, dtype = autocast_state()
        event = RECORDER.add("loss", autocast=enabled, autocast_dtype=dtype)
        out = loss_fn(*args, **kwargs)
        if isinstance(out, torch.Tensor):
            value = float(out.detach().float()) if out.numel() == 1 else None
            RECORDER.losses.append(out)
            RECORDER.loss_values.append(value)
            RECORDER.amend(event, output_dtype=str(out.dtype).replace("torch.", ""),
                           value=value if value is not None and math.isfinite(value) else None)
        return out

    return recorded_loss

