"""Runs in the learner's processes, each of which is both measured and checked (referee.py).

On a CPU every process that loads the learner's code runs `probe` on the same batch, on data the grading
side draws and tells only now: the main run ("step") calls train_step once, the "evaluate" run calls
evaluate once, and what each returns is checked against the grading side's own run on the same data,
while the kernel's peak of that same process is its memory. No run is measured without being checked,
so code that behaves differently when measured gains nothing. `measure` is the grading side's own
reference processes (baseline, original step, no_grad forward), which load no learner code.

On CUDA, which cgroups do not count, the main run measures both steps with the allocator in-process (the
documented in-process row of docs/threat-model.md) and calls evaluate too.
"""
import torch

import scenario
from grader.checks.learner import probing
from grader.checks.learner.probes import learner_function, loss_number
from grader.checks.learner.probing import install_cuda_emulation


def prepare():
    install_cuda_emulation()  # .to('cuda') and torch.cuda.synchronize() work on a CPU-only host
    probing.return_freed_memory()  # in every process alike, the learner's and the grader's own


def _record_step_gradients(named, optimizer, seen):
    inner = optimizer.step

    def step(*args, **kwargs):
        seen.append(scenario.grads(named))
        return inner(*args, **kwargs)

    optimizer.step = step


def probe(api):
    seed = probing.ask({"op": "data"})["seed"]
    observations = {"measure": probing.memory_measure(api.device)}
    if api.device == "cuda":
        observations.update(_original_on_cuda(seed))
    if api.run == "step" or api.device == "cuda":
        observations.update(_step(api, seed))
    if api.run == "evaluate" or api.device == "cuda":
        observations.update(_evaluate(api, seed))
    return observations


def _original_on_cuda(seed):
    # cgroups do not see device memory: the in-process row of docs/threat-model.md. A warm-up run first keeps
    # one-time allocations (e.g. cuBLAS workspaces) out of both measurements.
    scenario.original_train_step(*scenario.build(seed, "cuda"))
    model, optimizer, loss_fn, x, y = scenario.build(seed, "cuda")
    _, original_bytes, _ = probing.measure_step(
        lambda: scenario.original_train_step(model, optimizer, loss_fn, x, y), "cuda", model.parameters())
    return {"original_bytes": original_bytes}


def _step(api, seed):
    model, optimizer, loss_fn, x, y = scenario.build(seed, api.device)
    named = scenario.named_parameters(model)  # before the learner's code can wrap (and rename) anything
    seen = []
    _record_step_gradients(named, optimizer, seen)
    if api.device == "cuda":
        loss, learner_bytes, _ = probing.measure_step(lambda: api.call(model, optimizer, loss_fn, x, y), "cuda",
                                                      model.parameters())
    else:
        loss, learner_bytes = api.call(model, optimizer, loss_fn, x, y), None
    return {"learner_bytes": learner_bytes, "loss": loss_number(loss), "loss_type": type(loss).__name__,
            "step_grads": seen,
            "params_after": {n: p.detach().float().cpu().clone() for n, p in named}}


def _evaluate(api, seed):
    evaluate = learner_function(api, "evaluate")
    model, _, _, x, _ = scenario.build(seed, api.device)
    with probing.SavedTensorMeter(exclude=model.parameters()) as meter:
        out = evaluate(model, x)
    is_tensor = isinstance(out, torch.Tensor)
    return {"eval": {"type": type(out).__name__, "saved_count": meter.count,
                     "requires_grad": bool(is_tensor and out.requires_grad),
                     "has_graph": bool(is_tensor and out.grad_fn is not None),
                     "value": out.detach().float().cpu().clone() if is_tensor else None}}


def measure(api, name):
    """The grading side's own reference process `name`, on the same batch; no learner code is loaded."""
    model, optimizer, loss_fn, x, y = scenario.build(api.seed, api.device)
    if name == "original":
        scenario.original_train_step(model, optimizer, loss_fn, x, y)
    elif name == "no-grad":
        with torch.no_grad():
            model(x)
    return {}
