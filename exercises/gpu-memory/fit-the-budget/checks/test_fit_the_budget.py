"""Checks for gpu-memory/fit-the-budget, run in the grading process."""
import math

import pytest
import torch

import scenario
from grader.checks.grading.judging import bar_figure, check, fail, figure, show

# Checkpointing recomputes the same float32 operations: measured difference 0 on CPU. fp16 activations
# change the head's gradients alone by 3.5e-4..1.5e-3 of their largest entry (measured at batch 256,
# seeds 1-3), the loss only ~1e-6.
LOSS_TOLERANCE = 1e-5
GRAD_TOLERANCE = 1e-4  # of the gradient's largest entry


def _mb(n):
    return f"{n / 2**20:.2f} MB"


@pytest.fixture(scope="module")
def reference(run, outside):
    """The original step and a no_grad forward on the data the learner's processes ran on (referee.py)."""
    model, optimizer, loss_fn, x, y = scenario.build(outside["seed"], run["device"])
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    grads = scenario.grads(scenario.named_parameters(model))
    optimizer.step()
    params_after = {n: p.detach().float().cpu().clone() for n, p in model.named_parameters()}
    eval_model, _, _, x, _ = scenario.build(outside["seed"], run["device"])
    with torch.no_grad():
        outputs = eval_model(x).float().cpu()
    return {"loss": float(loss), "grads": grads, "params_after": params_after, "outputs": outputs}


METERS = {"cgroup": "the kernel's count for the process's cgroup",
          "container": "the kernel's count for the grading container, sampled every millisecond",
          "maxrss": "the process's peak resident memory as the kernel reports it"}
# The budget is a fraction of the original step's memory: on CPU of what it needs above building the
# model and batch, as the grading side's meter reads it (scenario.py has the measurements).
BUDGET = scenario.BUDGET
# evaluate may need what a no_grad forward needs plus a quarter of the original step's extra memory;
# measured: no_grad 25 MB, a forward that keeps its graph 194 MB, the original step 203 MB.
EVAL_ALLOWANCE = 0.25
WHAT_RAN = {"step": "your train_step", "evaluate": "your evaluate", "baseline": "only the building of the model "
            "and batch", "original": "the original step", "no-grad": "a forward pass under torch.no_grad()"}


def _measured(outside, name):
    run = outside["memory"].get(name)
    if run is None or run["bytes"] is None:
        raise RuntimeError(f"no memory measurement {name!r}: {run}")
    if not run["ok"]:
        fail(f"In the grader's run of {WHAT_RAN[name]} (a process of its own, on a batch of "
             f"{scenario.BATCH['cpu']}): {run['message']}")
    return run["bytes"]


def _extra(outside, name):
    return _measured(outside, name) - _measured(outside, "baseline")


def _evaluate_run(observed, outside, run):
    """What the run that called evaluate observed: on a CPU a process of its own (measured too), on CUDA the
    main run."""
    if run["device"] == "cuda":
        return observed
    found = (observed.get("runs") or {}).get("evaluate")
    if found is None:
        _measured(outside, "evaluate")  # says why that process sent nothing back
        fail("The grader's run of your evaluate sent nothing back.")
    return found


@check("under-budget")
def test_step_fits_the_budget(observed, outside, run):
    if run["device"] == "cuda":
        # cgroups do not count device memory: on CUDA the peak is the allocator's, read in the learner's
        # process (docs/threat-model.md).
        original, got = observed["original_bytes"], observed["learner_bytes"]
        if got > BUDGET * original:
            fail(f"Your step needs {_mb(got)}, {got / original:.0%} of the original step's {_mb(original)}; the "
                 f"budget is {BUDGET:.0%} ({_mb(BUDGET * original)}). Measured: {observed['measure']}.")
        return
    original, got = _extra(outside, "original"), _extra(outside, "step")
    if got > BUDGET * original:
        meter = METERS.get(outside["memory"]["step"]["meter"], "the kernel's count")
        fail(f"Your step needed {_mb(got)} above building the model and the batch, {got / original:.0%} of "
             f"the original step's {_mb(original)}; the budget is {BUDGET:.0%} "
             f"({_mb(BUDGET * original)}). Measured by the grader from outside: the peak memory of the "
             f"process that ran your step on a batch of {scenario.BATCH['cpu']}, the step whose loss and "
             f"gradients are checked ({meter}).")


@check("same-loss-and-grads")
def test_same_loss_and_gradients(observed, reference):
    if observed["loss"] is None:
        fail(f"train_step returned {observed['loss_type']}; return the loss (a tensor or a float).")
    if not math.isclose(observed["loss"], reference["loss"], rel_tol=LOSS_TOLERANCE, abs_tol=1e-7):
        fail(f"Your step's loss is {observed['loss']:.7g}; the original step's is {reference['loss']:.7g}.")
    steps = observed["step_grads"]
    if len(steps) != 1:
        fail(f"optimizer.step() ran {len(steps)} times in one train_step; run it exactly once.")
    for name, want in reference["grads"].items():
        got = steps[0][name]
        if got is None:
            fail(f"When the optimizer stepped, '{name}' had no gradient. A reentrant checkpoint whose inputs "
                 "do not require grad passes no gradients to the block's weights: use use_reentrant=False.")
        diff, largest = float((got - want).abs().max()), float(want.abs().max())
        if not diff <= GRAD_TOLERANCE * largest + 1e-12:
            fail(f"The gradient of '{name}' differs from the original step's by up to {diff:.3g}, "
                 f"{diff / largest if largest else math.inf:.2g} of its largest entry (allowed: "
                 f"{GRAD_TOLERANCE:g}). Recomputing activations must not change them: keep float32, and clear "
                 "the previous step's gradients.")
    # The step itself, judged by where the weights ended (the count above is the learner's process's: an
    # optimizer stepped through its class, type(optimizer).step, is not seen there).
    for name, want in reference["params_after"].items():
        got = observed["params_after"].get(name)
        allowed = scenario.LR * GRAD_TOLERANCE * float(reference["grads"][name].abs().max()) \
            + 4 * torch.finfo(torch.float32).eps * float(want.abs().max())
        diff = float((got - want).abs().max()) if got is not None and got.shape == want.shape else math.inf
        if not diff <= allowed:
            fail(f"After your train_step the weights differ from one optimizer step's by up to {diff:.3g} (in "
                 f"'{name}'): the optimizer must step exactly once, with the gradients of this batch.")


@check("eval-without-graph")
def test_evaluate_builds_no_graph(observed, outside, reference, run):
    observed = _evaluate_run(observed, outside, run)
    result = observed["eval"]
    if result["value"] is None:
        fail(f"evaluate returned {result['type']}; return the model's output tensor.")
    if run["device"] != "cuda":
        got, no_grad = _extra(outside, "evaluate"), _extra(outside, "no-grad")
        allowed = no_grad + EVAL_ALLOWANCE * _extra(outside, "original")
        if got > allowed:
            fail(f"evaluate needed {_mb(got)} above building the model and the batch; a forward pass under "
                 f"torch.no_grad() needs {_mb(no_grad)}. The rest is activations kept for a backward that never "
                 "comes: run the forward pass under torch.no_grad() or torch.inference_mode(). (Measured by "
                 f"the grader from outside: the peak memory of the process that ran your evaluate on a batch of "
                 f"{scenario.BATCH['cpu']}, whose outputs are checked.)")
    if result["has_graph"] or result["requires_grad"] or result["saved_count"]:
        fail(f"evaluate built an autograd graph ({result['saved_count']} tensors saved for a backward that "
             "never comes): run the forward pass under torch.no_grad() or torch.inference_mode().")
    want = reference["outputs"]
    if result["value"].shape != want.shape:
        fail(f"evaluate returned a tensor of shape {tuple(result['value'].shape)}; the model's output has "
             f"shape {tuple(want.shape)}.")
    diff = float((result["value"] - want).abs().max())
    if not diff <= 1e-5 * max(1.0, float(want.abs().max())):
        fail(f"evaluate's outputs differ from the model's by up to {diff:.3g}.")


# -- what the verdict shows (grader/core/display.py) ------------------------------------------------------------

@figure
def test_show_the_memory(observed, outside, run):
    if run["device"] == "cuda":
        original, got = observed["original_bytes"], observed["learner_bytes"]
        where = "the allocator's peak in your process"
    else:
        original, got = _extra(outside, "original"), _extra(outside, "step")
        where = f"measured by the grader from outside, a batch of {scenario.BATCH['cpu']}"
    show(figure=bar_figure(
        "memory", "Memory of your step, against the budget", "MB above building the model and the batch",
        f"Your bar must end left of the budget line ({BUDGET:.0%} of the original step); {where}.",
        f"Bar chart: your step needed {got / 2**20:.1f} MB, the original step {original / 2**20:.1f} MB, "
        f"the budget is {BUDGET * original / 2**20:.1f} MB.",
        [("Your step", got / 2**20, "yours"), ("Original step", original / 2**20, "reference"),
         (f"Budget ({BUDGET:.0%})", BUDGET * original / 2**20, "limit")]))
