"""Every check of one AMP training step on an AmpStepTask (courselib.tasks), for mixed-precision/amp-step and
amp-clip-step: the grading process (checks/test_*.py). Each raises CheckFailed (`judging.fail`) with a
learner-facing message, like the shared verdicts of grader.checks.grading.verdicts, which these build on."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from courselib.tasks import AmpStepTask
from grader.checks.grading import verdicts
from grader.checks.grading.judging import at, calls, check, explained_by, fail, of_kind

__all__ = ["AmpStepChecks"]


class AmpStepChecks:
    """The checks of one AMP training step, `train_step(model, optimizer, scaler, loss_fn, x, y[, max_norm])`,
    as `courselib.probes.amp_step_probe` observed it on `task`. Not collected itself (its name does
    not start with Test): an exercise's test module subclasses it,

        import reference   # the exercise's checks/reference.py: grading side only

        class TestAmpStep(AmpStepChecks):
            task = scenario.TASK
            correct_run = staticmethod(reference.run)

    and pytest runs these tests there, in this order, then the subclass's own. Class attributes say what
    is the exercise's own: `task` (its AmpStepTask), `correct_run(seed, device)` (the correct step's run on
    it that the checks compare with: courselib.reference.amp_step_run, grading side only, which the exercise's
    checks/reference.py passes in), and, for the matches-reference message, `reference_name`
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
