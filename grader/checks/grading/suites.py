"""Checks that several exercises share, for an exercise's `checks/test_*.py` (the grading process):

    AmpStepChecks                  every check of one AMP training step on an AmpStepTask
                                   (grader.checks.learner.scenarios): runs, autocast-scope, scaled-backward,
                                   step-update-order, grads-cleared, matches-reference. Subclass it as
                                   `class TestX(AmpStepChecks)` with the exercise's task; add the checks
                                   that are its own as methods (mixed-precision/amp-step, amp-clip-step)
    train_step_timeline(events, what_to_look_for)
                                   the timeline of each call of train_step, for a @figure
    check_losses_per_step(observed, steps)
                                   `runs` of a whole training loop: one loss per step, each a number
    zero_grad_fractions(events)    each optimizer step's share of exactly-zero gradient values
    late_zeros_and_loss_ratio(events, final_loss, fp32_final_loss)
                                   the median zero share of the last steps, and the final loss against
                                   the fp32 run's (fix-underflow, bf16-train)

Each check raises CheckFailed (`judging.fail`) with a learner-facing message, like the shared verdicts of
grader.checks.grading.verdicts, which these build on.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Callable

import pytest

from grader.checks.grading import verdicts
from grader.checks.grading.checking import check, explained_by, fail
from grader.checks.grading.verdicts import Event, at, calls, of_kind
from grader.checks.learner.scenarios import AmpStepTask
from grader.core.display import timeline

__all__ = ["AmpStepChecks", "train_step_timeline", "check_losses_per_step", "zero_grad_fractions",
           "late_zeros_and_loss_ratio"]


class AmpStepChecks:
    """The checks of one AMP training step, `train_step(model, optimizer, scaler, loss_fn, x, y[, max_norm])`,
    as `grader.checks.learner.probes.amp_step_probe` observed it on `task`. Not collected itself (its name does
    not start with Test): an exercise's test module subclasses it,

        import reference   # the exercise's checks/reference.py: grading side only

        class TestAmpStep(AmpStepChecks):
            task = scenario.TASK
            correct_run = staticmethod(reference.run)

    and pytest runs these tests there, in this order, then the subclass's own. Class attributes say what
    is the exercise's own: `task` (its AmpStepTask), `correct_run(seed, device)` (the correct step's run on
    it that the checks compare with: grader.reference.amp.amp_step_run, which this module cannot import,
    being importable from a learner's process), and, for the matches-reference message, `reference_name`
    and `correct_step` (what a correct step does)."""

    task: AmpStepTask = AmpStepTask()
    correct_run: Callable[[int, str], dict[str, list[Any]]]
    reference_name = "a correct AMP step"
    correct_step = ("A correct step zeroes the gradients, backpropagates the scaled loss and lets scaler.step "
                    "unscale them before the update.")

    @pytest.fixture(scope="class")
    def reference(self, run: dict[str, Any]) -> dict[str, list[Any]]:
        """A correct AMP step, run on the same model, data and device: losses, weights and scale per call."""
        return self.correct_run(run["seed"], run["device"])

    @check("runs")
    def test_every_call_completes(self, observed: dict[str, Any]) -> None:
        explaining = {"step-without-scaled-backward": "scaled-backward", "update-missing": "step-update-order"}
        for i, error in enumerate(observed["errors"]):
            if error and error["kind"] in explaining:
                explained_by(explaining[error["kind"]], f"Call {i + 1} of train_step failed. {error['message']}",
                             error["line"])
            if error:
                fail(f"Call {i + 1} of train_step failed. {error['message']}", error["line"])

    @check("runs")
    def test_returns_the_loss(self, observed: dict[str, Any], reference: dict[str, Any]) -> None:
        verdicts.check_returned_losses(observed, reference, self.task.calls)

    @check("autocast-scope")
    def test_autocast_covers_forward_and_loss_only(self, observed: dict[str, Any]) -> None:
        verdicts.check_autocast_scope(observed["events"])

    @check("scaled-backward")
    def test_backward_on_scaled_loss(self, observed: dict[str, Any]) -> None:
        verdicts.check_scaled_backward(observed["events"])

    @check("step-update-order")
    def test_one_step_then_one_update_per_call(self, observed: dict[str, Any]) -> None:
        for i, span in enumerate(calls(observed["events"])):
            created = of_kind(span, "scaler.init")
            if created:
                fail(f"Call {i + 1} of train_step created a GradScaler of its own{at(created[0])} instead of "
                     "using the scaler it was given. A new scaler starts at its initial scale every call, so it "
                     "never backs off after an overflow or grows after a quiet stretch.", created[0].get("line"),
                     hint="Use the `scaler` argument: `scaler.scale(loss).backward()`, `scaler.step(optimizer)`, "
                          "`scaler.update()`.")
        for i, span in enumerate(calls(observed["events"])):
            verdicts.check_step_then_update(span, f"call {i + 1} of train_step")

    @check("grads-cleared")
    def test_gradients_cleared_before_backward(self, observed: dict[str, Any]) -> None:
        verdicts.check_grads_cleared(observed["events"])

    @check("matches-reference")
    def test_updates_match_a_correct_amp_step(self, observed: dict[str, Any], reference: dict[str, Any]) -> None:
        for i in range(self.task.calls):
            got, want = observed["params_after"][i], reference["params_after"][i]
            name, diff = verdicts.largest_difference(got, want)
            if diff > verdicts.weight_tolerance(want):
                verdicts.fail_if_clipped_scaled_gradients(observed["events"])
                fail(f"After call {i + 1} the weights differ from {self.reference_name} by up to {diff:.3g} "
                     f"(in '{name}'). {self.correct_step}")

    @check("matches-reference")
    def test_overflowing_step_is_skipped(self, observed: dict[str, Any], reference: dict[str, Any]) -> None:
        # Call `calls` (0-based) is the one whose scaled fp16 gradients overflow.
        verdicts.check_overflowing_step_skipped(observed, reference, self.task.calls)

    @check("matches-reference")
    def test_small_gradients_survive_the_step(self, observed: dict[str, Any], reference: dict[str, Any]) -> None:
        """Only a scaled backward keeps this call's float16 gradients from underflowing (AmpStepTask)."""
        verdicts.check_small_gradients_survive(observed, reference, self.task.underflow_call)


def train_step_timeline(events: list[Event], what_to_look_for: str) -> dict[str, Any]:
    """The timeline of each call of train_step (`show(trace=...)` in a @figure): the verdict keeps the call
    a failing check names, else the first. `what_to_look_for` ends the caption: what a correct call does."""
    return timeline(events, group_by="call", group_label="call of train_step", title="What your step did",
                    caption="The calls your train_step made, in order (the call a failing check names, else the "
                            f"first): {what_to_look_for}")


def check_losses_per_step(observed: dict[str, Any], steps: int) -> None:
    """`runs` of a training loop `train(..., steps)` (grader.checks.learner.probes.training_probe): it returned a
    list of `steps` numbers."""
    returned = observed["returned"]
    if returned is None:
        fail(f"train returned {observed['returned_type']}; return a list with the loss of each step.")
    if len(returned) != steps:
        fail(f"train returned {len(returned)} losses for {steps} steps; return one per step.")
    if any(v is None for v in returned):
        fail("Some entries of the returned list are not numbers; append loss.item() each step.")
    _check_returned_are_computed(observed, returned)


def _check_returned_are_computed(observed: dict[str, Any], returned: list[float]) -> None:
    """Each returned number is a loss that loss_fn computed, in order (a loop may compute more, e.g. a
    logging forward): the losses the spy saw, not a scaled loss or another number of the same length."""
    computed = [e.get("value") for e in of_kind(observed["events"], "loss")]
    position = 0
    for i, got in enumerate(returned):
        if not math.isfinite(got):
            continue  # an overflowing step's loss is what the loop saw: judged by the training checks
        found = next((j for j in range(position, len(computed)) if computed[j] is not None
                      and math.isclose(got, computed[j], rel_tol=1e-4)), None)
        if found is not None:
            position = found + 1
            continue
        want = computed[i] if len(computed) == len(returned) else None
        if want is None:
            fail(f"train returned {got:.4g} for step {i + 1}, which is none of the losses your loss_fn computed "
                 "from there on; return loss.item() of each step.")
        ratio = got / want if want else math.inf
        scaled = math.isfinite(ratio) and ratio >= 2 and math.isclose(math.log2(ratio), round(math.log2(ratio)),
                                                                       abs_tol=1e-3)
        what = f"the scaled loss ({ratio:.0f}x the loss)" if scaled else "not the loss"
        fail(f"train returned {got:.4g} for step {i + 1}, {what}: the loss your loss_fn computed in that step "
             f"was {want:.4g}. Return loss.item(), the loss itself.")


def zero_grad_fractions(events: list[Event]) -> list[float]:
    """Each optimizer step's share of gradient values that were exactly zero, as the probe's
    `watch_optimizer(optimizer, measure_zero_grads=True)` recorded it."""
    return [e["zero_grad_fraction"] for e in of_kind(events, "optimizer.step")
            if e.get("zero_grad_fraction") is not None]


def late_zeros_and_loss_ratio(events: list[Event], final_loss: float, fp32_final_loss: float,
                              last: int = 50) -> tuple[float, float]:
    """(the median share of exactly-zero gradient values over the last `last` optimizer steps, the learner's
    final loss over the fp32 run's: inf when that is not positive). Fails when the optimizer never stepped."""
    fractions = zero_grad_fractions(events)
    if not fractions:
        fail("The optimizer never stepped, so the model did not learn.")
    late = statistics.median(fractions[-last:])
    ratio = final_loss / fp32_final_loss if fp32_final_loss > 0 else math.inf
    return late, ratio
