"""Checks for gradient-accumulation/accumulate-amp. They run in the grading process, never beside learner code."""
import bisect

import pytest
import torch

import scenario
from grader.checks.grading.judging import (
    figure,
    line_figure,
    show,
    timeline,
    at,
    backward_divisor,
    between_backwards,
    calls,
    check,
    check_autocast_scope,
    check_step_then_update,
    explained_by,
    fail,
    fail_if_clipped_scaled_gradients,
    of_kind,
)

# Both sides run under fp16 autocast; they differ only in rounding. Measured over 40 seeds: worst
# difference 8.4e-4 of a gradient's largest entry. A wrong divisor is off by 33% or more.
GRAD_TOLERANCE = 1e-2
SCALE = 2.0 ** 16  # GradScaler's initial scale: keeps the reference's fp16 gradients from underflowing


@pytest.fixture(scope="module")
def events(observed):
    """The first call's events: the calls' spies judge the ordinary run; the second run (scenario.py)
    is judged by its outcome alone."""
    spans = calls(observed["events"])
    return spans[0] if spans else []


@pytest.fixture(scope="module")
def backwards(events):
    events = of_kind(events, "backward")
    if len(events) != scenario.MICRO_BATCHES:
        fail(f"backward() ran {len(events)} times for {scenario.MICRO_BATCHES} micro-batches; run it once "
             "per micro-batch.", events[0].get("line") if events else None)
    return events


def _window_of(i):
    return next(w for w in scenario.windows() if i in w)


@check("autocast-scope")
def test_autocast_covers_forward_and_loss_only(events):
    check_autocast_scope(events)


@check("scaled-backward")
def test_every_backward_is_scaled(events):
    events = of_kind(events, "backward")
    if not events:
        fail("backward() was never called.")
    for i, event in enumerate(events):
        kind, _, ratio = backward_divisor(event)
        if kind == "raw":
            fail(f"Micro-batch {i + 1}: backward(){at(event)} ran on the loss itself, not on "
                 "scaler.scale(loss): small fp16 gradients can underflow to zero.", event.get("line"))
        if kind != "scaled":
            detail = f" ({ratio:.4g} times the loss)" if ratio else ""
            fail(f"Micro-batch {i + 1}: backward(){at(event)} ran on a tensor that is neither "
                 f"scaler.scale(loss) nor a whole fraction of it{detail}.", event.get("line"))


@pytest.fixture(scope="module")
def updates(events, run):
    """Each real update: (its event, the micro-batches backpropagated before it, the first parameter whose
    gradient differs from the large-batch gradient of the window it closes as (name, got, want), or None,
    and that large-batch gradient, or None past the micro-batches). Computed once for the two checks that
    judge it and the figure."""
    backward_indices = [e["index"] for e in of_kind(events, "backward")]
    found = []
    # One more than the windows is enough to judge (step-at-boundaries counts them all): each costs a
    # backward here, and the stream is the learner's to fill.
    for event in of_kind(events, "optimizer.grads")[:len(scenario.windows()) + 1]:
        done = bisect.bisect_left(backward_indices, event["index"])  # backwards before it
        gap = want = None
        if 0 < done <= scenario.MICRO_BATCHES:
            want = _large_batch_gradient(run, event["params"], _window_of(done - 1))
            gap = next(((name, event["grads"][name], w) for name, w in want.items()
                        if event["grads"][name] is None or not _within(event["grads"][name], w)), None)
        found.append((event, done, gap, want))
    return found


def _within(got, want) -> bool:
    return float((got - want).abs().max()) <= GRAD_TOLERANCE * float(want.abs().max()) + 1e-6


@check("loss-divided")
def test_loss_divided_by_window_size(backwards, events, updates):
    # Every update used its window's mean gradient however it got there (fairseq divides the summed
    # gradients after the window, `multiply_grads`, instead of dividing each loss).
    if len(updates) == len(scenario.windows()) and all(0 < done <= scenario.MICRO_BATCHES and gap is None
                                                       for _, done, gap, _want in updates):
        return  # divided after the window instead of before backward: the same update (docs/course.md)
    losses = of_kind(events, "loss")
    for i, event in enumerate(backwards):
        kind, k, ratio = backward_divisor(event)
        # Mark the cause, the line that computes (and should divide) this micro-batch's loss, not the
        # backward call where its effect shows.
        loss = next((e for e in reversed(losses) if e["index"] < event["index"]), event)
        line = loss.get("line") or event.get("line")
        want = len(_window_of(i))
        if k is None:
            fail(f"Micro-batch {i + 1}: backward(){at(event)} ran on {ratio:.4g} times the loss, which is not "
                 f"the loss divided by a whole number of micro-batches.", line)
        if k == want:
            continue
        if k == 1:
            fail(f"Micro-batch {i + 1}: the loss was not divided before backward(){at(event)}, so the "
                 f"window's gradient is the sum of {want} micro-batch gradients, {want}x the large-batch "
                 "gradient.", line)
        if want < scenario.ACCUM_STEPS:
            fail(f"Micro-batch {i + 1} is in the last window, which holds only {want} micro-batch"
                 f"{'es' if want > 1 else ''}; its loss was divided by {k}, so that update is {want}/{k} of "
                 f"the window's mean gradient. Divide by the window's real size.", line)
        fail(f"Micro-batch {i + 1}: the loss was divided by {k} before backward(){at(event)}; a window of "
             f"{want} micro-batches needs a division by {want}.", line)


@check("grads-cleared-per-window")
def test_gradients_cleared_once_per_window(events, backwards):
    before = _events_before_each(events, backwards)
    stepped = [i == 0 or any(e["event"] == "scaler.step" for e in before[i]) for i in range(len(backwards))]
    # Cleared exactly after each of the learner's own steps, at the wrong micro-batches: one misplaced window
    # boundary, which step-at-boundaries names; saying it twice would be two messages for one mistake.
    follows_own_steps = all(event["grads_clear"] == stepped[i] for i, event in enumerate(backwards))
    for i, event in enumerate(backwards):
        first = i == _window_of(i)[0]
        if first and not event["grads_clear"]:
            message = (f"Micro-batch {i + 1} starts a new window, but when its backward(){at(event)} ran the "
                       "gradients still held the previous window's values. Call optimizer.zero_grad() after each "
                       "optimizer step.")
            if follows_own_steps:
                explained_by("step-at-boundaries", message, event.get("line"))
            fail(message, event.get("line"))
        if not first and event["grads_clear"]:
            # Mark the call that cleared them, not the backward where it shows.
            cleared = next((e for e in reversed(before[i]) if e["event"] == "optimizer.zero_grad"), None)
            by = f" by optimizer.zero_grad(){at(cleared)}" if cleared else ""
            message = (f"Micro-batch {i + 1} is in the middle of a window, but the gradients were cleared{by} before "
                       f"its backward(){at(event)}: the window's earlier micro-batches were thrown away. Clear "
                       "them only once per window, after its step.")
            line = (cleared or event).get("line")
            if follows_own_steps:
                explained_by("step-at-boundaries", message, line)
            fail(message, line)


def _events_before_each(events, backwards):
    """For each backward, the events since the previous backward (since the call's start for the first)."""
    spans, start = [], 0
    for backward in backwards:
        spans.append([e for e in events if start <= e["index"] < backward["index"]])
        start = backward["index"] + 1
    return spans


@check("step-at-boundaries")
def test_steps_only_at_window_boundaries(events, backwards):
    direct = [e for e in of_kind(events, "optimizer.step") if not e["via_scaler"]]
    if direct:
        fail(f"optimizer.step(){at(direct[0])} was called directly. Call scaler.step(optimizer): it unscales "
             "the accumulated gradients and skips a step whose gradients hold inf or NaN.", direct[0].get("line"))
    first_backward = backwards[0]["index"]
    early = [e for e in events if e["event"] in ("scaler.step", "scaler.update") and e["index"] < first_backward]
    if early:
        fail(f"{early[0]['event']}(){at(early[0])} ran before the first micro-batch's backward.", early[0].get("line"))
    boundaries = {w[-1] for w in scenario.windows()}
    for i, span in enumerate(between_backwards(events)):
        steps = of_kind(span, "scaler.step")
        updates = of_kind(span, "scaler.update")
        if i not in boundaries:
            if steps or updates:
                event = (steps or updates)[0]
                fail(f"{event['event']}(){at(event)} ran after micro-batch {i + 1}, in the middle of a window "
                     f"of {scenario.ACCUM_STEPS}: step only after a window's last micro-batch.", event.get("line"))
            continue
        last = " (the last, partial window: step on it too)" if i == scenario.MICRO_BATCHES - 1 else ""
        if not steps:
            fail(f"Micro-batch {i + 1} ends a window{last}, but scaler.step(optimizer) did not run after it.",
                 backwards[i].get("line"))
        check_step_then_update(span, f"the window ending at micro-batch {i + 1}")


def _large_batch_gradient(run, params, window):
    """The window as one batch, one backward, under the same fp16 autocast as the learner's loop."""
    device = run["device"]
    model, _, loss_fn, micro_batches = scenario.build(run["seed"], device)
    model.load_state_dict(params)
    x = torch.cat([micro_batches[i][0] for i in window])
    y = torch.cat([micro_batches[i][1] for i in window])
    with torch.autocast(device_type=device, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    (loss * SCALE).backward()
    return {n: p.grad.detach().float().cpu() / SCALE for n, p in model.named_parameters()}


@check("matches-large-batch")
def test_each_update_uses_the_large_batch_gradient(events, updates):
    if not updates:
        fail("The optimizer never stepped, so the model did not learn.")
    for j, (event, done, gap, _want) in enumerate(updates):
        # The window this update closes: the one holding the last micro-batch backpropagated before it.
        if done == 0:
            fail(f"Update {j + 1}{at(event)} ran before any backward().", event.get("line"))
        if done > scenario.MICRO_BATCHES:
            fail(f"backward() ran {done} times for {scenario.MICRO_BATCHES} micro-batches before update {j + 1}"
                 f"{at(event)}; run it once per micro-batch.", event.get("line"))
        if gap is None:
            continue
        name, got, w = gap
        if got is None:
            fail(f"Update {j + 1}{at(event)} saw no gradient for '{name}'.", event.get("line"))
        window = _window_of(done - 1)
        size = f"{len(window)} micro-batch{'es' if len(window) > 1 else ''}"
        scale = float(w.abs().max())
        diff = float((got - w).abs().max())
        fail_if_clipped_scaled_gradients(events)
        ratio = float(got.norm() / w.norm()) if float(w.norm()) else float("nan")
        where = f", line {event['line']}" if event.get("line") else ""
        fail(f"Update {j + 1} (window of {size}{where}) used a gradient that differs from the "
             f"fp16 large-batch gradient of its window by up to {diff:.3g} in '{name}' (allowed: up to "
             f"{GRAD_TOLERANCE * scale + 1e-6:.3g}, {GRAD_TOLERANCE:.0%} of that gradient's largest entry, "
             f"{scale:.3g}); its norm is {ratio:.3g}x the large-batch one.", event.get("line"))


OUTCOME_TOLERANCE = 1e-2  # of the largest entry of the reference run's total update, per parameter


@pytest.fixture(scope="module")
def reference_run(run):
    """A correct accumulation run, here in the grading process: (initial weights, final weights)."""
    return _correct_run(run["device"], *scenario.build(run["seed"], run["device"]))


@pytest.fixture(scope="module")
def reference_signature_run(run):
    return _correct_run(run["device"], *scenario.build_signature_run(run["seed"], run["device"]))


def _correct_run(device, model, optimizer, loss_fn, micro_batches):
    initial = scenario.params(model)
    scaler = torch.amp.GradScaler(device)
    optimizer.zero_grad()
    for window in scenario.windows():
        for i in window:
            x, y = micro_batches[i]
            with torch.autocast(device_type=device, dtype=torch.float16):
                loss = loss_fn(model(x), y) / len(window)
            scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
    return initial, scenario.params(model)


@check("matches-reference-run")
def test_training_ends_where_a_correct_run_ends(observed, reference_run):
    _compare_outcome(observed.get("final_params") or {}, reference_run, "After training")


@check("matches-reference-run")
def test_tiny_gradients_and_an_overflow_end_where_a_correct_run_ends(observed, reference_signature_run):
    run = ("In a second run, with a loss a millionth of the usual size (its float16 gradients underflow unless "
           "scaled) and a first micro-batch whose scaled float16 gradients overflow, ")
    if observed["signature_error"]:
        fail(run + f"your train raised. {observed['signature_error']['message']}",
             observed["signature_error"]["line"])
    _compare_outcome(observed.get("signature_final_params") or {}, reference_signature_run, run + "after training",
                     why="A correct loop scales every loss (scaler.scale), lets scaler.step skip the "
                         "overflowing window and clears the gradients before the next one.")


def _compare_outcome(got, reference, when, why=None):
    initial, final = reference
    for name, want in final.items():
        if name not in got or got[name].shape != want.shape:
            fail(f"{when}, '{name}' was missing or had another shape.")
        if not torch.isfinite(got[name]).all():
            fail(f"{when}, '{name}' held inf or NaN: an overflowing step reached the weights. "
                 + (why or "scaler.step(optimizer) skips a step whose gradients hold inf or NaN."))
        want_update = want - initial[name]
        got_update = got[name] - initial[name]
        scale = float(want_update.abs().max())
        diff = float((got_update - want_update).abs().max())
        if not diff <= OUTCOME_TOLERANCE * scale + 1e-7:
            ratio = float(got_update.norm() / want_update.norm()) if float(want_update.norm()) else float("nan")
            fail(f"{when}, the total change of '{name}' differs from a correct run's by up to {diff:.3g} "
                 f"(allowed: up to {OUTCOME_TOLERANCE * scale + 1e-7:.3g}, {OUTCOME_TOLERANCE:.0%} of the correct "
                 f"run's largest change, {scale:.3g}); its size is {ratio:.3g}x the correct run's. " + (why or (
                     f"Each of the {len(scenario.windows())} windows must update the weights exactly once, with "
                     "its mean gradient and the learning rate you were given.")))


# -- what the verdict shows (grader/core/display.py) ------------------------------------------------------------

@figure
def test_show_the_windows(events, updates):
    show(trace=timeline(
        events, group_by="update", group_label="window", title="What one accumulation window did",
        caption="The calls of one window of your loop (the window a failing check names, else the first): "
                "a scaled backward per micro-batch, then one scaler.step(optimizer) and scaler.update()."))
    yours, large = [], []
    for number, (event, _done, _gap, want) in enumerate(updates, 1):
        grads = [g for g in event["grads"].values() if g is not None]
        yours.append((number, float(torch.cat([g.reshape(-1) for g in grads]).norm()) if grads else 0.0))
        if want is not None:
            large.append((number, float(torch.cat([w.reshape(-1) for w in want.values()]).norm())))
    show(figure=line_figure(
        "update-size", "Size of each update's gradient, against the large batch's",
        "update (window)", "gradient size (L2 norm)",
        "Each window's update should use the gradient one large batch would give: the two lines should meet. "
        "Above it, the loss was not divided; far below, the gradients were cleared mid-window.",
        f"Line chart: for each of your {len(yours)} updates, the L2 norm of the gradient the optimizer used, and of "
        f"the large-batch gradient of the same window at the same weights ({len(large)} windows).",
        {"Your updates": yours, "Large batch": large}))
