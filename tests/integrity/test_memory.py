"""fit-the-budget's memory is measured from outside the learner's process (checks/referee.py): the
kernel's peak for a process that ran only the step. The reported attacks (the starter's step wrapped in
the learner's own saved_tensors_hooks, or in save_on_cpu) and others in their spirit fail, in both
sandboxes."""
from __future__ import annotations

from pathlib import Path

from grader.host.grading import run_submission
from tests.helpers import caught_by

EXERCISE = "gpu-memory/fit-the-budget"
FOLDER = Path(__file__).resolve().parents[2] / "exercises" / "gpu-memory" / "fit-the-budget"
SOLUTION = (FOLDER / "solution.py").read_text()
NO_GRAD_EVALUATE = '''

def evaluate(model, x):
    with torch.no_grad():
        return model(x)
'''
STARTER_STEP = '''
import torch


def _original(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()
'''


def wrapped(context: str, after: str = "") -> str:
    return STARTER_STEP + f'''

def train_step(model, optimizer, loss_fn, x, y):
    with {context}:
        loss = _original(model, optimizer, loss_fn, x, y)
    {after or "pass"}
    return loss
''' + NO_GRAD_EVALUATE


def failed_checks(sandbox, code: str) -> dict[str, str]:
    result = run_submission(EXERCISE, code, sandbox=sandbox)
    assert result["status"] in ("passed", "failed"), result["error"]
    return {c["id"]: c["message"] for c in result["checks"] if c["id"] in caught_by(result)}


def test_control_the_solution_passes(sandbox):
    assert failed_checks(sandbox, SOLUTION) == {}


def test_pass_through_saved_tensor_hooks_do_not_hide_the_activations(sandbox):
    failed = failed_checks(sandbox, wrapped("torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)"))
    assert set(failed) == {"under-budget"}
    assert "from outside" in failed["under-budget"]


def test_save_on_cpu_does_not_hide_the_activations_on_a_cpu(sandbox):
    failed = failed_checks(sandbox, wrapped("torch.autograd.graph.save_on_cpu()"))
    assert set(failed) == {"under-budget"}


def test_resetting_the_peak_through_clear_refs_changes_nothing(sandbox):
    reset = '''try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets the process's peak resident set, where it is allowed
    except OSError:
        pass'''
    failed = failed_checks(sandbox, wrapped("torch.enable_grad()", after=reset))
    assert set(failed) == {"under-budget"}


def test_an_evaluate_that_builds_a_graph_and_hides_it_is_caught(sandbox):
    hidden = STARTER_STEP.replace("_original", "train_step") + '''

def evaluate(model, x):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        out = model(x)
    return out.detach()  # no graph left to see, but every activation was kept while it ran
'''
    failed = failed_checks(sandbox, hidden)
    assert "eval-without-graph" in failed


def test_a_step_and_an_evaluate_that_idle_when_measured_are_caught(sandbox):
    # Code that can tell a measurement from a checked run (here: probe.measure on the call stack) does
    # nothing when measured and the real work when checked. Every process that runs the learner's code
    # is now both measured and checked, on the same batch: there is nothing to tell apart.
    tells = STARTER_STEP + '''
import inspect


def _measured(x):
    return any(frame.function == "measure" for frame in inspect.stack())


def train_step(model, optimizer, loss_fn, x, y):
    if _measured(x):
        return torch.tensor(0.0)
    return _original(model, optimizer, loss_fn, x, y)


def evaluate(model, x):
    if _measured(x):
        with torch.no_grad():
            return model(x)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        out = model(x)
    return out.detach()
'''
    failed = failed_checks(sandbox, tells)
    assert {"under-budget", "eval-without-graph"} <= failed.keys(), failed


def test_an_extra_step_through_the_optimizers_class_is_caught_by_the_weights(sandbox):
    # The step count the learner's process reports sees optimizer.step() on the instance only; the weights
    # after the step show a second one.
    twice = SOLUTION.replace("    optimizer.step()\n", "    optimizer.step()\n    type(optimizer).step(optimizer)\n")
    assert twice != SOLUTION
    failed = failed_checks(sandbox, twice)
    assert set(failed) == {"same-loss-and-grads"}
    assert "exactly once" in failed["same-loss-and-grads"]
