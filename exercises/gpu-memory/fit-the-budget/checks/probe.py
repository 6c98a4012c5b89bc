"""Runs in the learner's process: measure the original step and the learner's, then call evaluate."""
import sys

import torch

import scenario
from grader.checks import probing
from grader.checks.probing import LearnerError, describe_exception, install_cuda_emulation


def prepare():
    install_cuda_emulation()  # .to('cuda') and torch.cuda.synchronize() work on a CPU-only host


def _learner_function(name, api):
    function = getattr(sys.modules["submission"], name, None)
    if not callable(function):
        raise LearnerError("missing", f"Your code must define `{name}`: the grader calls it.")

    def call(*args):
        try:
            return function(*args)
        except Exception as exc:  # noqa: BLE001 - anything the learner's code raises is the learner's error
            raise describe_exception(exc, api.memory_mb) from None

    return call


def _record_step_gradients(model, optimizer, seen):
    inner = optimizer.step

    def step(*args, **kwargs):
        seen.append(scenario.grads(model))
        return inner(*args, **kwargs)

    optimizer.step = step


def probe(api):
    evaluate = _learner_function("evaluate", api)
    device = api.device

    # On CUDA the original step, measured the same way (cgroups do not see device memory: this is the
    # in-process row of docs/threat-model.md); a warm-up run first keeps one-time allocations (e.g.
    # cuBLAS workspaces) out of both measurements. On CPU the grading side measures (referee.py).
    original_bytes = None
    if device == "cuda":
        scenario.original_train_step(*scenario.build(api.seed, device))
        model, optimizer, loss_fn, x, y = scenario.build(api.seed, device)
        _, original_bytes, _ = probing.measure_step(
            lambda: scenario.original_train_step(model, optimizer, loss_fn, x, y), device, model.parameters())

    model, optimizer, loss_fn, x, y = scenario.build(api.seed, device)
    seen = []
    _record_step_gradients(model, optimizer, seen)
    loss, learner_bytes, saved_count = probing.measure_step(lambda: api.call(model, optimizer, loss_fn, x, y),
                                                           device, model.parameters())
    loss_value = float(loss) if isinstance(loss, (int, float)) or (
        isinstance(loss, torch.Tensor) and loss.numel() == 1) else None

    eval_model, _, _, x, _ = scenario.build(api.seed, device)
    with probing.SavedTensorMeter(exclude=eval_model.parameters()) as meter:
        out = evaluate(eval_model, x)
    is_tensor = isinstance(out, torch.Tensor)
    return {
        "measure": probing.memory_measure(device),
        "original_bytes": original_bytes, "learner_bytes": learner_bytes, "saved_count": saved_count,
        "loss": loss_value, "loss_type": type(loss).__name__, "step_grads": seen,
        "eval": {"type": type(out).__name__, "saved_count": meter.count,
                 "requires_grad": bool(is_tensor and out.requires_grad),
                 "has_graph": bool(is_tensor and out.grad_fn is not None),
                 "value": out.detach().float().cpu().clone() if is_tensor else None},
    }


def measure(api, name):
    """One thing on the measurement batch, in a process of its own whose peak the grading side reads."""
    probing.return_freed_memory()
    model, optimizer, loss_fn, x, y = scenario.build(api.seed, api.device, batch=scenario.MEASURE_BATCH[api.device])
    if name == "original":
        scenario.original_train_step(model, optimizer, loss_fn, x, y)
    elif name == "step":
        api.call(model, optimizer, loss_fn, x, y)
    elif name == "evaluate":
        _learner_function("evaluate", api)(model, x)
    elif name == "no-grad":
        with torch.no_grad():
            model(x)
    return {}
