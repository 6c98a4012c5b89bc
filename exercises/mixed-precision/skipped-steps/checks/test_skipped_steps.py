"""Checks for mixed-precision/skipped-steps. They run in the grading process, never beside learner code.

The grading side runs a correct loop itself (reference.py: a step is skipped when scaler.update()
lowered the scale) and compares what the learner's run ended with: the learning rate and the scheduler's
step count, the EMA's weights and update count, the returned step count and the weights. Where a number is
off, the recorded events (steps.py) say in which batch the loop went wrong and on which line."""
import math

import pytest

import reference as correct_loop
import scenario
import steps
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
    return f"{reference['real_steps']} of the {scenario.BATCHES} steps are real, the other {scenario.BATCHES - reference['real_steps']} skipped"


@check("runs")
def test_returns_the_step_count(observed):
    got = observed["returned"]
    if got is None:
        fail(f"train returned {observed['returned_type']}; return the number of optimizer steps that really ran "
             "(an int).")
    if not math.isfinite(got) or got != int(got):
        fail(f"train returned {got:g}, which is not a whole number of steps; return how many optimizer steps "
             "really ran (an int).")


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


@check("scheduler-on-real-steps")
def test_scheduler_advances_only_on_real_steps(observed, reference):
    got_lr, got_steps = observed["lr"], observed["scheduler_steps"]
    want_lr, want_steps = reference["lr"], reference["scheduler_steps"]
    if _same_schedule(observed, reference):
        return
    what = (f"After the loop the learning rate was {got_lr:.4g}, {got_steps} scheduler steps from the start; a "
            f"correct loop steps the scheduler once per real optimizer step and ends at {want_lr:.4g}, {want_steps} "
            f"steps ({_real(reference)}).")
    wrong = steps.wrong_advance(observed, "scheduler.step")
    if wrong:
        fail(f"{what} {wrong[0]}", line=wrong[1])
    fail(what)


@check("ema-on-real-steps")
def test_ema_advances_only_on_real_steps(observed, reference, run):
    name, diff = largest_difference(observed["ema_params"], reference["ema_params"])
    got, want = observed["ema_updates"], reference["ema_updates"]
    if got == want and diff <= correct_loop.tolerance(reference["ema_params"], run["device"]):
        return
    what = (f"After the loop the EMA had been updated {got} times, and its weights were up to {diff:.3g} away from a "
            f"correct loop's EMA (in '{name}'), which is updated once per real optimizer step: {want} times "
            f"({_real(reference)}).")
    wrong = steps.wrong_advance(observed, "ema.update")
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
    stepped = steps.real_step_count(observed)
    if got == stepped and not _same_schedule(observed, reference):
        # Another learning rate moves the weights, and so which later steps overflow: such a run's real steps
        # are not a correct loop's (8 against 9 for some seeds). scheduler-on-real-steps fails on outside
        # evidence; the count is judged against the run's own real steps, so that it passes or fails
        # whatever the seed.
        return
    why = ""
    if got == scenario.BATCHES:
        why = " It counted every batch, the skipped ones too: count a step only when scaler.update() kept or raised the scale."
    elif got < want:
        grew = any(span["real"] and span["update"] and span["update"].get("scale_before") is not None
                   and span["update"].get("scale_after") is not None
                   and span["update"]["scale_after"] > span["update"]["scale_before"] for span in steps.batches(observed))
        why = " It left out real steps" + (": a growing scale is no skip, only a falling one is." if grew else ".")
    yours = (f"as in a correct loop ({_real(reference)})" if stepped == want else
             f"and a correct loop on these batches steps {want} times ({_real(reference)})")
    fail(f"train returned {got}, but the optimizer really stepped {stepped} times in your loop (its step hook "
         f"counted them), {yours}.{why}")


@check("matches-reference")
def test_weights_end_where_a_correct_loop_ends(observed, reference, run):
    name, diff = largest_difference(observed["params"], reference["params"])
    if diff > correct_loop.tolerance(reference["params"], run["device"]):
        fail(f"After the loop the weights differ from a correct loop's by up to {diff:.3g} (in '{name}'). A correct "
             "loop steps through the scaler every batch and lowers the learning rate only after real steps.")
