"""Checks for mixed-precision/amp-clip-step. They run in the grading process, never beside learner code."""
import math

import pytest
import torch

import scenario
from grader.checks.judging import (
    at,
    calls,
    check,
    check_autocast_scope,
    check_grads_cleared,
    check_overflowing_step_skipped,
    check_returned_losses,
    check_scaled_backward,
    check_small_gradients_survive,
    check_step_then_update,
    explained_by,
    fail,
    fail_if_clipped_scaled_gradients,
    largest_difference,
    of_kind,
    weight_tolerance,
)


@pytest.fixture(scope="module")
def reference(run):
    """A correct AMP step with clipping after unscale_, run on the same model, data and device: losses, weights and scale per call."""
    model, optimizer, loss_fn, batches, _ = scenario.build(run["seed"], run["device"])
    scaler = torch.amp.GradScaler(run["device"])
    losses, params_after, scale_after = [], [], []
    calls = [(x, y, loss_fn) for x, y in batches] + [(*batches[0], scenario.tiny(loss_fn))]
    for i, (x, y, loss_fn) in enumerate(calls):
        if i == scenario.UNDERFLOW_CALL:
            scenario.start_underflow_call(optimizer)
        optimizer.zero_grad()
        with torch.autocast(device_type=run["device"], dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), scenario.MAX_NORM)
        scaler.step(optimizer)
        scaler.update()
        losses.append(float(loss))
        params_after.append(scenario.params(model))
        scale_after.append(float(scaler.get_scale()))
    return {"losses": losses, "params_after": params_after, "scale_after": scale_after}


@check("runs")
def test_every_call_completes(observed):
    explaining = {"step-without-scaled-backward": "scaled-backward", "update-missing": "step-update-order"}
    for i, error in enumerate(observed["errors"]):
        if error and error["kind"] in explaining:
            explained_by(explaining[error["kind"]], f"Call {i + 1} of train_step failed. {error['message']}",
                         error["line"])
        if error:
            fail(f"Call {i + 1} of train_step failed. {error['message']}", error["line"])


@check("runs")
def test_returns_the_loss(observed, reference):
    check_returned_losses(observed, reference, scenario.CALLS)


@check("autocast-scope")
def test_autocast_covers_forward_and_loss_only(observed):
    check_autocast_scope(observed["events"])


@check("scaled-backward")
def test_backward_on_scaled_loss(observed):
    check_scaled_backward(observed["events"])


@check("step-update-order")
def test_one_step_then_one_update_per_call(observed):
    for i, span in enumerate(calls(observed["events"])):
        created = of_kind(span, "scaler.init")
        if created:
            fail(f"Call {i + 1} of train_step created a GradScaler of its own{at(created[0])} instead of "
                 "using the scaler it was given. A new scaler starts at its initial scale every call, so it "
                 "never backs off after an overflow or grows after a quiet stretch.", created[0].get("line"),
                 hint="Use the `scaler` argument: `scaler.scale(loss).backward()`, `scaler.step(optimizer)`, "
                      "`scaler.update()`.")
    for i, span in enumerate(calls(observed["events"])):
        check_step_then_update(span, f"call {i + 1} of train_step")


CLIP_HINT = ("After `scaler.scale(loss).backward()`: `scaler.unscale_(optimizer)`, then "
             "`torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`, then `scaler.step(optimizer)` and "
             "`scaler.update()`.")


@check("unscale-then-clip")
def test_clips_unscaled_gradients_once_before_the_step(observed):
    for i, span in enumerate(calls(observed["events"])):
        if i == scenario.CALLS:  # the overflowing call: its step is skipped whatever the clipping did
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


@check("grads-cleared")
def test_gradients_cleared_before_backward(observed):
    check_grads_cleared(observed["events"])


@check("matches-reference")
def test_updates_match_a_correct_amp_step(observed, reference):
    for i in range(scenario.CALLS):
        got, want = observed["params_after"][i], reference["params_after"][i]
        name, diff = largest_difference(got, want)
        if diff > weight_tolerance(want):
            fail_if_clipped_scaled_gradients(observed["events"])
            fail(f"After call {i + 1} the weights differ from a correct AMP step with clipping by up to {diff:.3g} "
                 f"(in '{name}'). A correct step zeroes the gradients, backpropagates the scaled loss, calls "
                 f"scaler.unscale_(optimizer), clips the unscaled gradients to max_norm ({scenario.MAX_NORM}, "
                 "the argument you were given), then steps and updates through the scaler.")


@check("matches-reference")
def test_overflowing_step_is_skipped(observed, reference):
    check_overflowing_step_skipped(observed, reference, scenario.CALLS)  # the call whose fp16 loss overflows


@check("matches-reference")
def test_small_gradients_survive_the_step(observed, reference):
    """Only a scaled backward keeps this call's float16 gradients from underflowing (scenario.py)."""
    check_small_gradients_survive(observed, reference, scenario.UNDERFLOW_CALL)
