"""Verdicts on what the learner's process recorded (grader.checks.grading.events), shared by the exercises that
need them: the AMP event log's splits and checks, the accumulation divisor of a backward, the paired
speed-up of timed rounds. `grader.checks.grading.judging` re-exports them for an exercise's checks.

Each check function raises CheckFailed with a learner-facing message naming what happened at run time
and, where a call can be traced to the submission, its line. They run in the grading process only.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

import torch

from grader.checks.grading.checking import explained_by, fail

Event = dict[str, Any]
SIXTEEN_BIT = {"float16", "bfloat16"}


def at(event: Event) -> str:
    return f" (line {event['line']})" if event.get("line") else ""


def of_kind(events: list[Event], *kinds: str) -> list[Event]:
    return [e for e in events if e["event"] in kinds]


def calls(events: list[Event]) -> list[list[Event]]:
    """Split the log at the probe's `call` marks: one list per call of the learner's function."""
    spans: list[list[Event]] = []
    for event in events:
        if event["event"] == "mark" and event.get("label") == "call":
            spans.append([])
        elif spans:
            spans[-1].append(event)
    return spans


def iterations(events: list[Event]) -> list[list[Event]]:
    """Split the log into training iterations, each starting at a backward call."""
    spans: list[list[Event]] = []
    for event in events:
        if event["event"] == "backward":
            spans.append([])
        if spans:
            spans[-1].append(event)
    return spans


def between_backwards(events: list[Event]) -> list[list[Event]]:
    """For each backward, the events after it up to the next backward (the end of the call for the last)."""
    spans: list[list[Event]] = []
    for event in events:
        if event["event"] == "backward":
            spans.append([])
        elif spans:
            spans[-1].append(event)
    return spans


def autocast_dtype(event: Event) -> str | None:
    """The autocast dtype an event's computation ran under, None without autocast. For a forward, autocast
    entered inside model.forward itself (a patched forward, accelerate's prepare) counts: its layers ran
    under it."""
    if event["autocast"]:
        dtype: str | None = event["autocast_dtype"]
        return dtype
    return event.get("inner_autocast") if event["event"] == "forward" else None


def check_autocast_scope(events: list[Event]) -> None:
    forwards = of_kind(events, "forward")
    if not forwards:
        fail("The model's forward pass never ran: call model(x) inside the autocast block.")
    for event in forwards:
        dtype = autocast_dtype(event)
        if dtype is None:
            fail(f"The forward pass{at(event)} ran without autocast, {_forward_precision(event)}. Wrap model(x) in "
                 "torch.autocast(device_type='cuda').", event=event)
        if dtype not in SIXTEEN_BIT:
            fail(f"The forward pass{at(event)} ran under autocast with dtype {dtype}, not a 16-bit type.",
                 event=event)
    losses = of_kind(events, "loss")
    if not losses:
        fail("The loss function you were given was never called: compute loss = loss_fn(out, y) "
             "inside the autocast block.")
    for event in losses:
        if not event["autocast"]:
            fail(f"The loss{at(event)} was computed outside autocast. Compute it inside the same "
                 "`with torch.autocast(...)` block as the forward pass.", event=event)
    backwards = of_kind(events, "backward")
    if not backwards:
        fail("backward() was never called.")
    for event in backwards:
        if event["autocast"]:
            fail(f"backward(){at(event)} was called inside the autocast block. Dedent it: only the "
                 "forward pass and the loss belong under autocast.", event=event)


def _forward_precision(event: Event) -> str:
    """What a forward without autocast computed in: its weights' dtype, as far as the spy saw them."""
    weights = event.get("weights_dtype")
    if weights in SIXTEEN_BIT:
        return (f"on weights cast to {weights} (the model itself was converted; AMP keeps the weights in float32 "
                "and lets autocast cast per operation)")
    return "in float32" if weights in (None, "float32") else f"on {weights} weights"


def check_scaled_backward(events: list[Event]) -> None:
    backwards = of_kind(events, "backward")
    if not backwards:
        fail("backward() was never called.")
    if not of_kind(events, "scaler.init") and not of_kind(events, "scaler.scale"):
        fail("No GradScaler was used: create one with torch.amp.GradScaler('cuda') and call "
             "scaler.scale(loss).backward().")
    for event in backwards:
        if event["on"] == "raw":
            fail(f"backward(){at(event)} ran on the raw loss, not on scaler.scale(loss): small fp16 "
                 "gradients can underflow to zero.", event=event)
        if event["on"] == "twice":
            fail(f"backward(){at(event)} ran on a loss scaled twice (scaler.scale(scaler.scale(loss))): its "
                 "gradients are the scale times too large, overflow, and scaler.step skips the step. Scale the "
                 "loss once.", event=event, hint="Call `scaler.scale(loss).backward()` once per step.")
        if event["on"] != "scaled":
            ratio = f" (it was {event['ratio']:.3g} times the loss)" if event.get("ratio") else ""
            fail(f"backward(){at(event)} ran on a tensor that is not scaler.scale(loss){ratio}.", event=event)
    disabled = [e for e in of_kind(events, "scaler.init") if not e.get("enabled", True)]
    if disabled:
        fail(f"The GradScaler created{at(disabled[0])} is disabled, so it scales nothing.", event=disabled[0])


def check_step_then_update(span: list[Event], label: str) -> None:
    """One training step's events: exactly one scaler.step(optimizer), then exactly one scaler.update()."""
    unseen = len(of_kind(span, "optimizer.class_step")) - len(of_kind(span, "optimizer.step"))
    if unseen > 0:
        fail(f"In {label}, the optimizer stepped {unseen} more time{'s' if unseen > 1 else ''} than "
             "optimizer.step() and scaler.step(optimizer) were called: its class's step was called "
             "directly. Step only through scaler.step(optimizer).")
    direct = [e for e in of_kind(span, "optimizer.step") if not e["via_scaler"]]
    if direct:
        fail(f"In {label}, optimizer.step(){at(direct[0])} was called directly. Call "
             "scaler.step(optimizer) instead: it unscales the gradients and skips steps with inf/NaN.", event=direct[0])
    steps = of_kind(span, "scaler.step")
    updates = of_kind(span, "scaler.update")
    if len(steps) != 1:
        where = at(steps[1]) if len(steps) > 1 else ""
        fail(f"In {label}, scaler.step(optimizer) ran {len(steps)} times{where}; it must run exactly once.",
             event=steps[1] if len(steps) > 1 else None,
             hint="Call `scaler.step(optimizer)` once per step, after the scaled backward.")
    if len(updates) != 1:
        where = at(updates[1]) if len(updates) > 1 else ""
        fail(f"In {label}, scaler.update() ran {len(updates)} times{where}; call it exactly once, after "
             "scaler.step(optimizer).", event=updates[1] if len(updates) > 1 else None,
             hint="Follow `scaler.step(optimizer)` with exactly one `scaler.update()`, on the scaler you were given.")
    if updates[0]["index"] < steps[0]["index"]:
        fail(f"In {label}, scaler.update(){at(updates[0])} ran before scaler.step(optimizer)"
             f"{at(steps[0])}: step first, then update.", event=updates[0],
             hint="`scaler.step(optimizer)` first, then `scaler.update()`.")


def fail_if_clipped_scaled_gradients(events: list[Event]) -> None:
    """For a check whose outcome is wrong anyway: name clipping before unscale_ when that is what ran."""
    clip = next((e for e in of_kind(events, "clip") if not e["after_unscale"]), None)
    if clip is not None:
        fail(f"{clip['function']}(){at(clip)} clipped the gradients before scaler.unscale_(optimizer): they were "
             "still multiplied by the scale, so the clipping threshold cut them far too hard and the update was "
             "too small.", event=clip,
             hint="Call `scaler.unscale_(optimizer)` before clipping, then `scaler.step(optimizer)` as usual.")


def check_grads_cleared(events: list[Event]) -> None:
    for event in of_kind(events, "backward"):
        if not event["grads_clear"]:
            before = [e for e in events if e["index"] < event["index"]]
            cleared_late = [e for e in of_kind(events, "optimizer.zero_grad") if e["index"] > event["index"]]
            if cleared_late and not of_kind(before, "optimizer.zero_grad"):
                # The official AMP recipe's loop clears at the end of each iteration (docs/course.md).
                fail(f"When backward(){at(event)} first ran, the gradients still held values from before this "
                     f"function was called: it clears them only at the end{at(cleared_late[0])}, as the "
                     "official recipe's loop does. A function that is one training step cannot assume its "
                     "caller left them clear; clear them before backward.", event=event)
            fail(f"When backward(){at(event)} ran, the gradients still held values from an earlier step, "
                 "so the new ones were added to them. Call optimizer.zero_grad() before backward.", event=event)


def check_returned_losses(observed: dict[str, Any], reference: dict[str, Any], calls: int) -> None:
    """Each completed call returned its batch's loss: not None, not the scaled loss, and within 1% of a correct
    run's. A correct run's loss is only what a call should return from a correct run's weights: once the
    weights went wrong after an earlier call (`weights_went_wrong`), a differing loss is that update's
    fault, explained by `matches-reference` (a skipped first step moved amp-step's call 3 by 1.2%, for 2 of
    103 seeds tried)."""
    for i in range(calls):
        if observed["errors"][i]:
            continue
        got, want = observed["returns"][i], reference["losses"][i]
        if got is None:
            fail(f"Call {i + 1}: train_step returned {observed['returned_types'][i]}; return the loss "
                 "(a tensor or a float).")
        if math.isclose(got, want * observed["scale_after"][i], rel_tol=1e-2):
            fail(f"Call {i + 1}: train_step returned {got:.4g}, the scaled loss; return the loss itself "
                 f"({want:.4g}).")
        if not math.isclose(got, want, rel_tol=1e-2, abs_tol=1e-4):
            if i and weights_went_wrong(observed, reference, i - 1):
                blew_up = "" if math.isfinite(got) else ", and this call's forward pass blew up on them"
                explained_by("matches-reference", f"Call {i + 1}: train_step returned {got:.4g}, where a correct "
                             f"run's loss of that batch is {want:.4g}: the weights were already wrong after call "
                             f"{i}{blew_up}.")
            fail(f"Call {i + 1}: train_step returned {got:.4g}, but the loss of that batch is {want:.4g}.")


# -- the weights after each call, against a correct run's (observed/reference["params_after"][i]) -------------

def weight_tolerance(want: dict[str, Any]) -> float:
    return 1e-3 * max(1.0, max(float(w.abs().max()) for w in want.values()))


def largest_difference(got: dict[str, Any], want: dict[str, Any]) -> tuple[str | None, float]:
    """(the parameter that differs most, by how much); inf as soon as one difference is not finite."""
    worst_name, worst = None, 0.0
    for name, value in want.items():
        diff = float((got[name] - value).abs().max())
        if not math.isfinite(diff):
            return name, math.inf
        if diff > worst:
            worst_name, worst = name, diff
    return worst_name, worst


def weights_went_wrong(observed: dict[str, Any], reference: dict[str, Any], i: int) -> bool:
    want = reference["params_after"][i]
    return largest_difference(observed["params_after"][i], want)[1] > weight_tolerance(want)


def check_overflowing_step_skipped(observed: dict[str, Any], reference: dict[str, Any], last: int) -> None:
    """Call `last` had a loss whose scaled fp16 gradients overflow: scaler.step must skip it and the scale drop."""
    before, after = observed["params_after"][last - 1], observed["params_after"][last]
    if any(not torch.isfinite(t).all() for t in after.values()):
        fail("On a call whose gradients overflow float16, your step wrote inf/NaN into the weights. "
             "scaler.step(optimizer) skips such steps; calling optimizer.step() yourself does not.")
    name, diff = largest_difference(after, before)
    if diff > 0:
        fail(f"On a call whose gradients overflow float16 (a finite loss 1e8 times the usual), the weights still "
             f"changed (by up to {diff:.3g} in '{name}'). Under autocast that step's scaled gradients are inf and "
             "scaler.step skips it.")
    want_scale = reference["scale_after"][last]
    if observed["scale_after"][last] != want_scale:
        spans = calls(observed.get("events") or [])
        updated = of_kind(spans[last], "scaler.update") if last < len(spans) else []
        if updated:
            fail(f"After an overflowing step the scale should drop to {want_scale:g}; the scaler you were given "
                 f"is at {observed['scale_after'][last]:g}, although scaler.update(){at(updated[0])} ran. "
                 "Something set the scale itself (scaler.update(new_scale=...), or the scaler's own state): let "
                 "update() back off on its own after a skipped step.", event=updated[0])
        fail(f"After an overflowing step the scale should drop to {want_scale:g}; the scaler you were "
             f"given is at {observed['scale_after'][last]:g}. Call scaler.update() on it every step.")


def check_small_gradients_survive(observed: dict[str, Any], reference: dict[str, Any], i: int) -> None:
    """Call `i` used a tiny loss: only a scaled backward keeps its float16 gradients from underflowing."""
    if len(observed["params_after"]) <= i or observed["errors"][i]:
        fail(f"Call {i + 1} of train_step did not complete, so the grader could not compare its update.")
    name, diff, allowed = None, 0.0, 0.0
    for key, want_after in reference["params_after"][i].items():
        want = want_after - reference["params_after"][i - 1][key]
        got = observed["params_after"][i][key] - observed["params_after"][i - 1][key]
        # 5% of the update, plus a few float32 steps of the weights it was added to.
        tolerance = 0.05 * float(want.abs().max()) + 4 * torch.finfo(torch.float32).eps * float(
            want_after.abs().max())
        worst = float((got - want).abs().max())
        if not worst <= tolerance and (name is None or worst - tolerance > diff - allowed):
            name, diff, allowed = key, worst, tolerance
    if name is not None:
        fail_if_clipped_scaled_gradients(observed["events"])
        fail(f"Call {i + 1} used a loss a millionth of the usual size, whose float16 gradients underflow to zero "
             f"unless the loss is scaled before backward. Your step's update differs from a correct AMP step's by "
             f"up to {diff:.3g} in '{name}' (allowed {allowed:.3g}). A correct step clears the old gradients, "
             "backpropagates scaler.scale(loss) (only that keeps these gradients from underflowing) and lets "
             "scaler.step(optimizer) unscale them.")


def divisor(event: dict[str, Any], max_divisor: int = 64) -> tuple[str, int | None, float | None]:
    """Classify a recorded backward: ('scaled' | 'raw' | 'other', the whole number the loss was divided
    by, the ratio of the backward target to the loss).

    A correct accumulation step backpropagates scale * loss / k, where k is the window's size.
    """
    value, loss, scale = event.get("value"), event.get("loss"), event.get("scale")
    if value is None or not loss:
        return "other", None, None
    ratio = value / loss
    if ratio == 0:
        return "other", None, ratio
    candidates = [("scaled", scale / ratio)] if scale else []
    candidates.append(("raw", 1.0 / ratio))
    for kind, k in candidates:
        nearest = round(k)
        if 1 <= nearest <= max_divisor and abs(k - nearest) <= 1e-3 * nearest:
            return kind, nearest, ratio
    return "other", None, ratio


def speedup(slow: list[float], fast: list[float]) -> float:
    """The median over rounds of slow/fast, each round's pair timed back to back.

    Pairing matters on a shared machine: a burst of load slows both halves of a round alike, while a
    ratio of separate medians can pair a quiet moment with a busy one (measured: an identical step
    showed 0.69x by medians, 1.00x paired).
    """
    return statistics.median(s / f for s, f in zip(slow, fast))


def check_faster(outside: dict[str, Any], bar: float, what: str, why: str) -> float:
    """The `faster` verdict on timing rounds (grader.checks.referee.timing.TimedRounds, `outside` as its `outside()`):
    enough rounds to decide, and the median of the per-round ratios (original over the learner's, `speedup`)
    at least `bar`. `what` names the timed run ("step", "epoch"); `why` ends a failure's message (where the
    time goes). Returns the ratio."""
    if outside.get("void"):  # a round timed while learner code ran (grader.checks.referee.timing): never a pass
        fail(outside["void"], hint="")
    rounds = outside["rounds"]
    if not outside["decided"]:
        fail(f"The grader timed {len(rounds)} rounds of your {what}, too few to decide (it needs "
             f"{outside['deciding']} on one side of the bar, or {outside['rounds_most']}): the run ended before the "
             "rest (see the other checks' messages).")
    ratio = speedup([r["original_s"] for r in rounds], [r["learner_s"] for r in rounds])
    if not ratio >= bar:
        fail(f"In the grader's own timing (median of {len(rounds)} alternating rounds, each on fresh data), the "
             f"original {what} took {ratio:.2f}x as long as yours; yours needs to be at least {bar:g}x faster. {why}")
    return ratio


# --- two DDP ranks (grader/checks/learner/ddp.py) ---

def early_allreduces(counts: list[int], ends_window: Callable[[int], bool]) -> list[int]:
    """The micro-batches (1-based) that do not end a window but after which the learner's rank's own comm
    hook saw an all-reduce."""
    return [i + 1 for i, count in enumerate(counts) if count and not ends_window(i)]


def where_early(counts: list[int], ends_window: Callable[[int], bool]) -> str:
    """A sentence for a failing message: where the learner's own count put the early all-reduces."""
    early = early_allreduces(counts, ends_window)
    return f" Your process's own count put them after micro-batch{'es' if len(early) > 1 else ''} " \
           f"{', '.join(map(str, early))}, inside a window." if early else ""


def fail_if_too_many_allreduces(report: dict[str, Any] | None, windows: int, who: str, where: str) -> int:
    """The grader's rank's count (-> it), failing when there is none or when a micro-batch inside a window
    synced too; `who` names the grader's rank ("the other rank", "rank 0"), `where` is `where_early`'s."""
    if report is None:
        fail(f"The grader's own process ({who}, which counts the all-reduces yours joins) sent no report: it was "
             "stopped, or the group never formed.", hint="")
    count: int = report["allreduces"]
    if count > windows:
        fail(f"Your process all-reduced the gradients {count} times for {windows} windows, counted by the grader's "
             f"own process ({who}): a micro-batch that does not end a window still synced, which is the "
             "communication no_sync saves. Run its forward, loss and backward inside `with model.no_sync():` "
             "(DDP decides at forward time whether backward syncs, so wrapping only backward() is not enough)."
             + where)
    return count
