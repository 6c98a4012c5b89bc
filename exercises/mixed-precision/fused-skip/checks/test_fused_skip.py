"""Checks for mixed-precision/fused-skip. They run in the grading process, never beside learner code.

The grading side runs a correct loop itself (reference.py: a step was skipped when scaler.update() lowered
the scale) and compares what the learner's run ended with: the learning rate and the scheduler's step count,
the returned step count and the weights. Where a number is off, the recorded events (batches.py) say in which
batch the loop went wrong and on which line."""
import math

import pytest

import batches
import reference as correct_loop
import scenario
from grader.checks.grading.judging import (
    check,
    check_scaled_backward,
    check_step_then_update,
    fail,
    iterations,
    largest_difference,
)


@pytest.fixture(scope="module")
def reference(run, outside):
    return correct_loop.reference(run["seed"], run["device"], tuple(outside["outliers"]))


def _real(reference):
    real = reference["real_steps"]
    return f"{real} of the {scenario.BATCHES} updates are real, the other {scenario.BATCHES - real} skipped"


@check("runs")
def test_returns_the_step_count(observed):
    got = observed["returned"]
    if got is None:
        fail(f"train returned {observed['returned_type']}; return the number of updates that really ran (an int).")
    if not math.isfinite(got) or got != int(got):
        fail(f"train returned {got:g}, which is not a whole number of steps; return how many updates really ran "
             "(an int).")


@check("through-the-scaler")
def test_every_batch_steps_through_the_scaler(observed):
    events = observed["events"]
    check_scaled_backward(events)
    spans = iterations(events)
    if len(spans) != scenario.BATCHES:
        fail(f"backward() ran {len(spans)} times for {scenario.BATCHES} batches; run one scaled backward per batch.")
    for i, span in enumerate(spans):
        check_step_then_update(span, f"batch {i + 1}")


def _same_schedule(observed, reference):
    """Whether the learner's run ended with a correct loop's learning rate and scheduler step count."""
    return (observed["scheduler_steps"] == reference["scheduler_steps"]
            and math.isclose(observed["lr"], reference["lr"], rel_tol=1e-6))


@check("warmup-on-real-steps")
def test_warmup_advances_only_on_real_steps(observed, reference):
    if _same_schedule(observed, reference):
        return
    what = (f"After the loop the learning rate was {observed['lr']:.4g}, {observed['scheduler_steps']} warm-up "
            f"steps from the start; a correct loop advances the warm-up once per real update and ends at "
            f"{reference['lr']:.4g}, {reference['scheduler_steps']} steps ({_real(reference)}).")
    wrong = batches.wrong_advance(observed)
    if wrong:
        fail(f"{what} {wrong[0]}", line=wrong[1])
    fail(what)


@check("counts-real-steps")
def test_returns_the_number_of_real_steps(observed, reference):
    want = reference["real_steps"]
    if observed["returned"] is None or not math.isfinite(observed["returned"]):
        fail(f"train returned {observed['returned_type']}, no step count to hold against a correct loop's {want}.")
    got = int(observed["returned"])
    if got == want:
        return
    real = batches.real_steps(observed)
    if got == real and not _same_schedule(observed, reference):
        # Another learning rate moves the weights, and so which later steps overflow: such a run's real updates
        # are not a correct loop's (8 against 9 for seed 7). warmup-on-real-steps fails on outside evidence; the
        # count is judged against the run's own real updates, so that it passes or fails whatever the seed.
        return
    calls = sum(span["step_calls"] for span in batches.spans(observed))
    why = ""
    if got == calls:
        why = (f" {got} is how often the optimizer's step() was called: a fused optimizer's step() runs on every "
               "batch, and its kernel skips the update itself, so counting step() calls (or step hooks) counts the "
               "skipped updates too.")
    elif got < want:
        why = " It left out real updates: a growing scale is no skip, only a falling one is."
    yours = (f"as in a correct loop ({_real(reference)})" if real == want else
             f"and a correct loop on these batches updates {want} times ({_real(reference)})")
    fail(f"train returned {got}, but the weights were really updated {real} times in your loop (the scale fell on "
         f"the other batches; AdamW's own state['step'] reads {observed['adam_steps']}), {yours}.{why}")


@check("matches-reference")
def test_weights_end_where_a_correct_loop_ends(observed, reference, run):
    name, diff = largest_difference(observed["params"], reference["params"])
    if diff > correct_loop.tolerance(reference["params"], run["device"]):
        fail(f"After the loop the weights differ from a correct loop's by up to {diff:.3g} (in '{name}'). A correct "
             "loop steps through the scaler every batch and advances the warm-up only after real updates.")
