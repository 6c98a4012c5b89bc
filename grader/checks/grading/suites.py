"""Checks that several exercises share, for an exercise's `checks/test_*.py` (the grading process):

    train_step_timeline(events, what_to_look_for)
                                   the timeline of each call of train_step, for a @figure
    check_losses_per_step(observed, steps)
                                   `runs` of a whole training loop: one loss per step, each a number
    zero_grad_fractions(events)    each optimizer step's share of exactly-zero gradient values
    late_zeros_and_loss_ratio(events, final_loss, fp32_final_loss)
                                   the median zero share of the last steps, and the final loss against
                                   the fp32 run's (fix-underflow, bf16-train)

Each check raises CheckFailed (`judging.fail`) with a learner-facing message, like the shared verdicts of
grader.checks.grading.verdicts, which these build on. The checks of one lesson's shared task are the course's
(exercises/_library/: courselib.checks.AmpStepChecks).
"""
from __future__ import annotations

import math
import statistics
from typing import Any

from grader.checks.grading.checking import fail
from grader.checks.grading.verdicts import Event, of_kind
from grader.core.display import timeline

__all__ = ["train_step_timeline", "check_losses_per_step", "zero_grad_fractions",
           "late_zeros_and_loss_ratio"]


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
    computed: list[Any] = [e.get("value") for e in of_kind(observed["events"], "loss")]  # floats, None: not one
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
