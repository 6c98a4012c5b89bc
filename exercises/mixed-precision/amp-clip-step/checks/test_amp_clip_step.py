"""Checks for mixed-precision/amp-clip-step. They run in the grading process, never beside learner code.

The AMP step's checks are shared with amp-step (courselib.checks.AmpStepChecks), here against a
reference that unscales, clips to MAX_NORM and steps through the scaler (the scenario's task); this
exercise's own is unscale-then-clip, and what matches-reference says a correct step does."""
import reference
import scenario
from grader.checks.grading.judging import at, calls, check, fail, of_kind
from courselib.checks import AmpStepChecks

MAX_NORM = scenario.MAX_NORM
# clip_grad_norm_ scales by max_norm / (norm + 1e-6): the clipped norm is max_norm to ~1e-5 here.
NORM_TOLERANCE = 1e-3

CLIP_HINT = ("After `scaler.scale(loss).backward()`: `scaler.unscale_(optimizer)`, then "
             "`torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`, then `scaler.step(optimizer)` and "
             "`scaler.update()`.")


class TestAmpClipStep(AmpStepChecks):
    task = scenario.TASK
    correct_run = staticmethod(reference.run)
    reference_name = "a correct AMP step with clipping"
    correct_step = ("A correct step zeroes the gradients, backpropagates the scaled loss, calls "
                    f"scaler.unscale_(optimizer), clips the unscaled gradients to max_norm ({scenario.MAX_NORM}, "
                    "the argument you were given), then steps and updates through the scaler.")

    @check("unscale-then-clip")
    def test_clips_unscaled_gradients_once_before_the_step(self, observed, reference):
        """Judged by what the optimizer step used: its gradients' total norm must be the correct step's, max_norm
        where their norm is above it, however the clipping was written (clip_grad_norm_, get_total_norm with
        clip_grads_with_norm_, a hand-written coefficient as in fairseq)."""
        for i, span in enumerate(calls(observed["events"])):
            if i == scenario.TASK.calls:  # the overflowing call: its step is skipped whatever the clipping did
                continue
            unscales = [e for e in of_kind(span, "scaler.unscale_") if not e.get("internal")]
            if len(unscales) > 1:
                fail(f"Call {i + 1} called scaler.unscale_(optimizer) {len(unscales)} times{at(unscales[1])}; call it "
                     "once per step, after backward and before clipping.", unscales[1].get("line"))
            used = of_kind(span, "optimizer.class_step")
            if not used or used[0].get("grad_norm") is None:
                continue  # no update, or one on non-finite gradients: the step's own checks say what went wrong
            step, norm = used[0], used[0]["grad_norm"]
            want = reference["step_norms"][i]
            if want is None or want < MAX_NORM * (1 - NORM_TOLERANCE):
                continue  # skipped, or below max_norm unclipped (the underflowing call): matches-reference judges it
            clips = of_kind(span, "clip")
            late = [c for c in clips if c["index"] > step["index"]]
            by_value = [c for c in clips if c["function"] == "clip_grad_value_"]
            if norm > MAX_NORM * (1 + NORM_TOLERANCE):
                if late and not [c for c in clips if c["index"] < step["index"]]:
                    fail(f"In call {i + 1}, {late[0]['function']}(){at(late[0])} ran after the optimizer step: the "
                         f"update had already used the unclipped gradients (total norm {norm:.3g}).",
                         late[0].get("line"))
                if by_value:
                    fail(f"Call {i + 1} clipped with clip_grad_value_(){at(by_value[0])}: it caps each value, and the "
                         f"gradients the step used still had a total norm of {norm:.3g}, above max_norm "
                         f"({MAX_NORM:g}). Clip their total norm: clip_grad_norm_(model.parameters(), max_norm).",
                         by_value[0].get("line"))
                what = "were never clipped" if not clips else "were not clipped to max_norm"
                fail(f"In call {i + 1} the gradients the optimizer step used {what}: their total norm was {norm:.3g}, "
                     f"above max_norm ({MAX_NORM:g}, the argument you were given).", (clips or [step])[0].get("line"))
            if norm < MAX_NORM * (1 - NORM_TOLERANCE):
                scaled = [c for c in clips if not c["after_unscale"]]
                if scaled:
                    fail(f"In call {i + 1}, {scaled[0]['function']}(){at(scaled[0])} clipped the gradients before "
                         "scaler.unscale_(optimizer), while they were still multiplied by the loss scale (65536 at "
                         f"first): the step then used gradients of total norm {norm:.3g}, far below max_norm "
                         f"({MAX_NORM:g}), so the update was tiny.", scaled[0].get("line"))
                where = by_value[0] if by_value else (clips or [step])[0]
                fail(f"In call {i + 1} the gradients the optimizer step used had a total norm of {norm:.3g}, below "
                     f"max_norm ({MAX_NORM:g}): they were cut harder than clipping to max_norm does (their norm here "
                     f"is {want:.3g} unclipped, so a correct step scales them to exactly max_norm).",
                     where.get("line"))
