"""Checks for mixed-precision/bf16-train, run in the grading process."""
import math

import pytest

import reference
import scenario
from grader.checks.grading import judging
from grader.checks.grading.judging import check, fail
from grader.checks.grading.suites import check_losses_per_step, late_zeros_and_loss_ratio

MAX_ZERO_FRACTION = 0.05  # median over the last 50 steps; fp16 without a scaler: ~0.85 (fix-underflow)
MAX_LOSS_RATIO = 1.25  # final loss vs the fp32 run; fp16 without a scaler: ~1.8


@pytest.fixture(scope="module")
def fp32_reference(run):
    return reference.fp32_run(run["seed"], run["device"])[1]


@pytest.fixture(scope="module")
def learner_final_loss(observed, run):
    return scenario.TASK.final_loss_of(observed["final_state"], run["seed"])


@check("runs")
def test_returns_a_loss_per_step(observed):
    check_losses_per_step(observed, scenario.STEPS)


@check("bf16-autocast")
def test_forward_and_loss_under_bf16_autocast(observed):
    events = observed["events"]
    keep_float32 = ("Autocast runs the forward in bfloat16 while the weights stay float32, so an update smaller than "
                    "bfloat16's precision (about 3 significant digits) is not rounded away. Leave the model in "
                    "float32 and let autocast pick each operation's dtype.")
    converted = sorted(name for name, dtype in observed["final_dtypes"].items() if dtype != "float32")
    if converted:
        dtype = observed["final_dtypes"][converted[0]]
        fail(f"Your model's weights ended in {dtype} ({len(converted)} of {len(observed['final_dtypes'])} tensors, "
             f"'{converted[0]}' first): the model itself was converted (for example model.to(torch.{dtype})). "
             + keep_float32)
    # Converted for training and back to float32 before returning: the forward passes saw the 16-bit weights.
    cast = next((e for e in judging.of_kind(events, "forward") if e.get("weights_dtype") not in (None, "float32")),
                None)
    if cast is not None:
        fail(f"The forward pass{judging.at(cast)} ran on {cast['weights_dtype']} weights: the model itself was "
             f"converted during training (for example model.to(torch.{cast['weights_dtype']})), even if its weights "
             "end in float32. " + keep_float32, cast.get("line"))
    judging.check_autocast_scope(events)  # forward and loss under autocast, backward outside
    for event in judging.of_kind(events, "forward") + judging.of_kind(events, "loss"):
        dtype = judging.autocast_dtype(event)
        if dtype != "bfloat16":
            what = "forward pass" if event["event"] == "forward" else "loss"
            scaled = " A GradScaler rescues float16 too, but here the point is the other fix." if dtype == "float16" \
                and judging.of_kind(events, "scaler.init") else ""
            fail(f"The {what}{judging.at(event)} ran under {dtype} autocast, not bfloat16. float16 has a 5-bit "
                 f"exponent and this task's gradients underflow in it; bfloat16 has float32's 8-bit exponent."
                 f"{scaled}", event.get("line"))


@check("no-scaler")
def test_no_grad_scaler(observed):
    """A disabled GradScaler (nanoGPT's `GradScaler(enabled=(dtype == 'float16'))`) scales nothing: accepted."""
    events = observed["events"]
    enabled = [e for e in judging.of_kind(events, "scaler.init") if e["enabled"]]
    enabled += [e for e in judging.of_kind(events, "scaler.step") if e.get("scale") is not None]
    if enabled:
        first = enabled[0]
        fail(f"A GradScaler was used{judging.at(first)}. With bfloat16 there is no underflow to guard against: "
             "the scaler multiplies the loss by a power of two and divides the gradients by it again, which "
             "changes nothing but costs an unscale pass and an inf/NaN check every step.", first.get("line"))
    steps = judging.of_kind(events, "optimizer.step")
    if len(steps) != scenario.STEPS:
        fail(f"optimizer.step() ran {len(steps)} times in {scenario.STEPS} steps; call it once per step.")


@check("learns-like-fp32")
def test_gradients_alive_and_loss_falls_like_fp32(observed, fp32_reference, learner_final_loss):
    late, ratio = late_zeros_and_loss_ratio(observed["events"], learner_final_loss, fp32_reference)
    if late > MAX_ZERO_FRACTION:
        fail(f"In the last 50 steps, a median {late:.0%} of the gradient values the optimizer saw were exactly "
             f"zero: they underflowed (final loss {learner_final_loss:.3g}, fp32's {fp32_reference:.3g}). In "
             "bfloat16 gradients this small are still representable.")
    if not math.isfinite(ratio) or ratio > MAX_LOSS_RATIO:
        fail(f"The loss did not fall like fp32: final loss {learner_final_loss:.3g}, {ratio:.2f}x the fp32 "
             f"run's {fp32_reference:.3g} (allowed: {MAX_LOSS_RATIO}x), although few gradient values were zero. "
             "Something other than underflow changed the training: compare your loop with the plain step.",
             hint="")
