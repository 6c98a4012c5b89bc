"""Checks for mixed-precision/fix-underflow, run in the grading process."""
import math

import pytest

import reference
import scenario
from grader.checks.grading import judging
from grader.checks.grading.judging import check, explained_by, fail
from grader.checks.grading.suites import check_losses_per_step, late_zeros_and_loss_ratio, zero_grad_fractions

MAX_ZERO_FRACTION = 0.05  # median over the last 50 steps; measured without a scaler: ~0.85
MAX_LOSS_RATIO = 1.25  # final loss vs the fp32 run; measured without a scaler: ~1.8, with one: 1.00


@pytest.fixture(scope="module")
def fp32_run(run):
    """The same training in float32: the loss of each step, and the final loss."""
    return reference.fp32_run(run["seed"], run["device"])


@pytest.fixture(scope="module")
def fp32_reference(fp32_run):
    return fp32_run[1]


@pytest.fixture(scope="module")
def learner_final_loss(observed, run):
    return scenario.TASK.final_loss_of(observed["final_state"], run["seed"])


@check("runs")
def test_returns_a_loss_per_step(observed):
    check_losses_per_step(observed, scenario.STEPS)


BF16_DECISION = (
    "bfloat16 keeps float32's exponent range, so its gradients do not underflow and it needs no GradScaler: "
    "on hardware that has it (NVIDIA Ampere and newer, CPUs with AMX) that is a legitimate fix in real "
    "training, and often the simpler one. This exercise is about float16 and its GradScaler, though: keep "
    "dtype=torch.float16 (CUDA autocast's default) and fix the underflow with the scaler.")


def _bf16_forward(events):
    return next((e for e in judging.of_kind(events, "forward") if judging.autocast_dtype(e) == "bfloat16"), None)


@check("autocast-scope")
def test_autocast_covers_forward_and_loss_only(observed):
    bf16 = _bf16_forward(observed["events"])
    if bf16 is not None:
        fail(f"The forward pass{judging.at(bf16)} ran under bfloat16 autocast. {BF16_DECISION}", bf16.get("line"),
             hint="Use `torch.autocast(device_type='cuda', dtype=torch.float16)` with a GradScaler.")
    judging.check_autocast_scope(observed["events"])


@check("scaled-backward")
def test_backward_on_scaled_loss(observed):
    events = observed["events"]
    if _bf16_forward(events) is not None and not judging.of_kind(events, "scaler.init"):
        explained_by("autocast-scope", "No GradScaler was used: the forward ran under bfloat16 autocast, which "
                     "needs none; this exercise keeps float16, whose gradients underflow without one.")
    judging.check_scaled_backward(events)


@check("step-update-order")
def test_one_step_then_one_update_per_iteration(observed):
    created = judging.of_kind(observed["events"], "scaler.init")
    if len(created) > 1:
        fail(f"A new GradScaler was created {len(created)} times{judging.at(created[1])} in one training run. "
             "Each starts again at its initial scale and forgets what update() learned (backing off after "
             "an overflow, growing after a quiet stretch), so the scale never adapts to the model.",
             created[1].get("line"), hint="Create the GradScaler once, before the loop, and reuse it every step.")
    spans = judging.iterations(observed["events"])
    if len(spans) != scenario.STEPS:
        fail(f"backward() ran {len(spans)} times in {scenario.STEPS} steps; run it once per step.")
    for i, span in enumerate(spans):
        judging.check_step_then_update(span, f"training step {i + 1}")


@check("underflow-fixed")
def test_gradients_alive_and_loss_falls_like_fp32(observed, fp32_reference, learner_final_loss):
    late, ratio = late_zeros_and_loss_ratio(observed["events"], learner_final_loss, fp32_reference)
    if late > MAX_ZERO_FRACTION:
        fell = "still fell close to" if math.isfinite(ratio) and ratio <= MAX_LOSS_RATIO else "ended far from"
        fail(f"In the last 50 steps, a median {late:.0%} of the gradient values the optimizer saw were exactly "
             f"zero: they underflowed in float16 (the final loss, {learner_final_loss:.3g}, {fell} fp32's "
             f"{fp32_reference:.3g}, but those weights learned nothing in those steps).")
    if not math.isfinite(ratio) or ratio > MAX_LOSS_RATIO:
        judging.fail_if_clipped_scaled_gradients(observed["events"])
        # The gradients did not underflow (checked above), so the underflow hint would not apply.
        fail(f"The loss did not fall like fp32: final loss {learner_final_loss:.3g}, {ratio:.2f}x the fp32 "
             f"run's {fp32_reference:.3g} (allowed: {MAX_LOSS_RATIO}x), although few gradient values were zero. "
             "Something other than underflow changed the training: compare your loop with the lesson's full AMP "
             "step.", hint="")


# -- what the verdict shows (grader/core/display.py) ------------------------------------------------------------

@judging.figure
def test_show_the_run(observed, run, fp32_run):
    events = observed["events"]
    judging.show(trace=judging.timeline(
        events, group_by="update", group_label="training step", title="What one training step did",
        caption="The calls of one step of your loop, in order (the step a failing check names, else the first): "
                "look for scaler.scale(loss) before backward() and for steps skipped for inf/NaN gradients."))
    returned = observed.get("returned") or []
    judging.show(figure=judging.line_figure(
        "loss", "Loss per step, against float32", "training step", "loss (MSE, log scale)",
        "Your run should fall like the float32 run; a loss that stays flat means the gradients were zero.",
        f"Line chart: your loss per step (as your function returned it, {len(returned)} steps) and the "
        f"float32 run's, on a log scale.",
        {"Your run": enumerate(returned, 1), "float32 run": enumerate(fp32_run[0], 1)}, log_y=True))
    yours = zero_grad_fractions(events)
    correct = reference.correct_scaled_zero_fractions(run["seed"], run["device"])
    judging.show(figure=judging.line_figure(
        "zero-gradients", "Gradient values that are exactly zero", "optimizer step", "share of gradient values (0-1)",
        "Underflow shows as a share near 1: float16 rounded the gradients to zero. A scaled run stays near 0.",
        f"Line chart: the share of exactly-zero gradient values at each of your {len(yours)} optimizer steps, "
        f"and at each of the {len(correct)} steps of a correct run with a GradScaler (0 means none).",
        {"Your run": enumerate(yours, 1), "Correct scaled run": enumerate(correct, 1)}))

