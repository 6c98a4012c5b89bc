"""Checks for mixed-precision/amp-clip-step. They run in the grading process, never beside learner code.

The AMP step's checks are shared with amp-step (grader.checks.suites.AmpStepChecks), here against a
reference that unscales, clips to MAX_NORM and steps through the scaler (the scenario's task); this
exercise's own is unscale-then-clip, and what matches-reference says a correct step does."""
import scenario
from grader.checks.judging import at, calls, check, fail, of_kind
from grader.checks.suites import AmpStepChecks

CLIP_HINT = ("After `scaler.scale(loss).backward()`: `scaler.unscale_(optimizer)`, then "
             "`torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`, then `scaler.step(optimizer)` and "
             "`scaler.update()`.")


class TestAmpClipStep(AmpStepChecks):
    task = scenario.TASK
    reference_name = "a correct AMP step with clipping"
    correct_step = ("A correct step zeroes the gradients, backpropagates the scaled loss, calls "
                    f"scaler.unscale_(optimizer), clips the unscaled gradients to max_norm ({scenario.MAX_NORM}, "
                    "the argument you were given), then steps and updates through the scaler.")

    @check("unscale-then-clip")
    def test_clips_unscaled_gradients_once_before_the_step(self, observed):
        for i, span in enumerate(calls(observed["events"])):
            if i == scenario.TASK.calls:  # the overflowing call: its step is skipped whatever the clipping did
                continue
            clips = of_kind(span, "clip")
            if not clips:
                fail(f"Call {i + 1} of train_step never clipped the gradients. Their norm is above max_norm "
                     f"({scenario.MAX_NORM}) here, so a correct step scales them down before the update.")
            steps = of_kind(span, "scaler.step") + [e for e in of_kind(span, "optimizer.step") if not e.get("via_scaler")]
            for clip in clips:
                if clip["function"] != "clip_grad_norm_":
                    fail(f"Call {i + 1} clipped with {clip['function']}(){at(clip)}; clip the gradients' total norm "
                         "with clip_grad_norm_(model.parameters(), max_norm).", clip.get("line"))
                if steps and clip["index"] > steps[0]["index"]:
                    fail(f"In call {i + 1}, {clip['function']}(){at(clip)} ran after the optimizer step{at(steps[0])}: "
                         "the update had already used the unclipped gradients.", clip.get("line"))
                if not clip["after_unscale"]:
                    fail(f"In call {i + 1}, {clip['function']}(){at(clip)} clipped the gradients before "
                         "scaler.unscale_(optimizer): they were still multiplied by the loss scale (65536 at "
                         "first), so the threshold cut them far too hard and the update was tiny.", clip.get("line"))
            unscales = [e for e in of_kind(span, "scaler.unscale_") if not e.get("internal")]
            if len(unscales) > 1:
                fail(f"Call {i + 1} called scaler.unscale_(optimizer) {len(unscales)} times{at(unscales[1])}; call it "
                     "once per step, after backward and before clipping.", unscales[1].get("line"))
