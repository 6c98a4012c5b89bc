"""profiling/graph-breaks attacked as a learner would (issue 48, findings 3, 7 and 1).

Finding 3: `mistakes/prints-the-tensor.py` plus a module class of its own whose `__getattribute__("compute_loss")`
put `print` back into dynamo's `reorderable_logging_functions` passed: the probe read `compute_loss` from the
module after it had put dynamo's defaults back. It now compiles the function the loader read from the module's
`__dict__` (`api.entry`) and notes every non-default setting dynamo reads while it compiles, so a setting changed
for the trace and put back before it ends (`torch._dynamo.comptime`) fails too.

Finding 7: a z-loss thresholded row by row instead of on the batch mean passed on seeds whose batches had every
row on one side of Z_MAX (seed 30 among them). Every batch now straddles Z_MAX row by row, on every seed.

Finding 1: `scenario.reference` (the original's run) was in the learner's process; it is now checks/reference.py,
which only the grading process imports.
"""
from __future__ import annotations

import sys

import pytest

from grader.host.grading import run_submission
from tests.support.grading import caught_by
from tests.support.paths import EXERCISES

EXERCISE = "profiling/graph-breaks"
FOLDER = EXERCISES / EXERCISE


def verdict(sandbox, code: str, seed: int | None = None) -> dict:
    result = run_submission(EXERCISE, code, sandbox=sandbox, seed=seed)
    assert result["status"] != "infra-error", result["error"]
    return result


# The attack as found: the print left in, and the module's class answering the probe's read of compute_loss.
SETS_THE_CONFIG_WHEN_READ = (FOLDER / "mistakes/prints-the-tensor.py").read_text() + '''

import sys


class _SetsTheConfigWhenRead(type(sys)):
    def __getattribute__(self, name):
        if name == "compute_loss":
            torch._dynamo.config.reorderable_logging_functions.add(print)
        return super().__getattribute__(name)


sys.modules[__name__].__class__ = _SetsTheConfigWhenRead
'''


def test_a_module_that_sets_the_config_when_its_function_is_read_does_not_pass(sandbox):
    # Refused at load (a module that is not a plain module) or failed by no-graph-breaks: never passed.
    result = verdict(sandbox, SETS_THE_CONFIG_WHEN_READ)
    assert result["passed"] is False, result
    assert result["status"] == "error" or "no-graph-breaks" in caught_by(result), result


# The same print, hidden by a setting changed while dynamo traces and put back before the trace ends: neither a
# comparison before nor one after the call sees it; dynamo's own read of the setting does.
SETS_THE_CONFIG_FOR_THE_TRACE = '''
import torch
import torch.nn.functional as F
from torch._dynamo.comptime import comptime

Z_WEIGHT, Z_MAX = 0.01, 4.0


def compute_loss(model, x, y):
    comptime(lambda ctx: torch._dynamo.config.reorderable_logging_functions.add(print))
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    print("cross-entropy", loss)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    comptime(lambda ctx: torch._dynamo.config.reorderable_logging_functions.discard(print))
    return loss + torch.where(z_loss > Z_MAX, Z_WEIGHT * z_loss, torch.zeros_like(z_loss))
'''


def test_a_setting_changed_for_the_trace_and_put_back_fails_no_graph_breaks(warm_sandbox):
    result = verdict(warm_sandbox("local"), SETS_THE_CONFIG_FOR_THE_TRACE)
    assert caught_by(result) == {"no-graph-breaks", "one-graph"}, result
    message = next(c["message"] for c in result["checks"] if c["id"] == "no-graph-breaks")
    assert "reorderable_logging_functions" in message, message


def test_a_per_row_threshold_fails_on_a_seed_whose_old_batches_lay_on_one_side(warm_sandbox):
    # Seed 30: before issue 48, every row of every batch was on its batch mean's side of Z_MAX.
    result = verdict(warm_sandbox("local"), (FOLDER / "mistakes/thresholds-each-row.py").read_text(), seed=30)
    assert caught_by(result) == {"same-result"}, result


@pytest.fixture
def checks_modules():
    """The exercise's scenario and reference modules, imported here as the grading process imports them."""
    sys.path.insert(0, str(FOLDER / "checks"))
    try:
        import reference
        import scenario
        yield scenario, reference
    finally:
        sys.path.remove(str(FOLDER / "checks"))
        sys.modules.pop("scenario", None)
        sys.modules.pop("reference", None)


def test_every_batch_straddles_z_max_row_by_row(checks_modules):
    """On each step of 50 seeds, the batch mean on its side of Z_MAX (SIDES) and some rows on the other, so a
    per-row threshold and the batch mean's give different losses; the weights move as the original moves them."""
    import torch

    scenario, reference = checks_modules
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: a second thread only waits for the first (2x slower on 2 cores)
    try:
        for seed in range(50):
            straddle(scenario, reference, seed)
    finally:
        torch.set_num_threads(threads)


def straddle(scenario, reference, seed: int) -> None:
    """Seed `seed`'s batches, each asserted to straddle Z_MAX with its mean on its side."""
    model, optimizer, data = scenario.build(seed, "cpu")
    for step, side in enumerate(scenario.SIDES):
        x, y = scenario.batch(model, step, data, "cpu")
        rows = scenario.row_z_losses(model, x)
        mean_over = bool(rows.mean() > scenario.Z_MAX)
        assert mean_over == (side == "over"), (seed, step, float(rows.mean()))
        assert bool(((rows > scenario.Z_MAX) != mean_over).any()), (seed, step, rows.tolist())
        optimizer.zero_grad()
        reference.original_compute_loss(model, x, y).backward()
        optimizer.step()


# Finding 1's way in as found for this exercise: the grading side's run of the original, in the scenario the
# probe imports. (tests/integrity/test_reference.py searches the whole process, every way a submission has.)
LOOKS_FOR_THE_REFERENCE = (FOLDER / "solution.py").read_text() + '''

import importlib, sys

_scenario = sys.modules.get("scenario")
_found = [n for n in ("reference", "original_compute_loss") if hasattr(_scenario, n)]
try:
    importlib.import_module("reference")
    _found.append("import reference")
except ImportError:
    pass
print(f"REFERENCE found: {_found}", flush=True)
'''


def test_the_original_run_is_not_in_the_learners_process(warm_sandbox):
    result = verdict(warm_sandbox("local"), LOOKS_FOR_THE_REFERENCE)
    assert "REFERENCE found: []" in result["output"], result["output"]
    assert result["passed"] is True, result
