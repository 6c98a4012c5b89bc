"""Checks for gradient-accumulation/token-weighted. They run in the grading process, never beside learner code.

Every real step's gradient is compared with the token mean of its window, the gradient one large batch
of the window's micro-batches gives with cross_entropy(reduction="mean", ignore_index=-100), recomputed
here at the weights that step saw (windows.py); where it differs, the weights each micro-batch's tokens got
in the learner's gradient (a fit on the micro-batches' summed-loss gradients) say how it was normalised.
Then the weights after every window and at the end are compared with a correct run of the grading side's
own."""
import pytest

import reference
import scenario
import windows
from grader.checks.grading.judging import at, between_backwards, calls, check, fail, of_kind

OUTCOME_TOLERANCE = 1e-2  # of the largest entry of the correct run's change so far, per parameter


@pytest.fixture(scope="module")
def events(observed):
    spans = calls(observed["events"])
    return spans[0] if spans else []


@pytest.fixture(scope="module")
def updates(events, run):
    return windows.analyse(events, run)


@pytest.fixture(scope="module")
def counts(run):
    return windows.counts(run["seed"])


@check("steps-once-per-window")
def test_one_real_step_after_each_window(events):
    backwards = of_kind(events, "backward")
    ends = {w[-1] for w in scenario.windows()}
    if 0 < len(backwards) < scenario.MICRO_BATCHES and len(backwards) - 1 in ends:
        left = range(len(backwards), scenario.MICRO_BATCHES)
        fail(f"Only {len(backwards)} of the {scenario.MICRO_BATCHES} micro-batches were backpropagated: "
             f"{windows.span(left)}, the last, short window, never trained the model. Step on the short last "
             "window too, with its own token count.", event=backwards[-1])
    if len(backwards) != scenario.MICRO_BATCHES:
        fail(f"backward() ran {len(backwards)} times for {scenario.MICRO_BATCHES} micro-batches; run it once per "
             "micro-batch (a whole window as one batch is the memory accumulation exists to save).",
             event=backwards[0] if backwards else None)
    early = [e for e in of_kind(events, "optimizer.class_step") if e["index"] < backwards[0]["index"]]
    if early:
        fail("The optimizer stepped before the first micro-batch's backward().", event=early[0])
    for i, span in enumerate(between_backwards(events)):
        real = of_kind(span, "optimizer.class_step")
        seen = of_kind(span, "optimizer.step")
        if i not in ends:
            if real:
                event = (seen or real)[0]
                fail(f"The optimizer stepped{at(event)} after micro-batch {i + 1}, in the middle of the window of "
                     f"{windows.span(windows.window_of(i))}: step only after a window's last micro-batch "
                     f"({', '.join(str(w[-1] + 1) for w in scenario.windows())} here).", event=event)
            continue
        short = (" (the last, short window: step on it too)"
                 if len(windows.window_of(i)) < scenario.ACCUM_STEPS else "")
        if not real:
            fail(f"Micro-batch {i + 1} ends a window{short}, but the optimizer did not step after it.",
                 event=backwards[i])
        if len(real) > 1:
            fail(f"The optimizer stepped {len(real)} times after micro-batch {i + 1}; once per window.",
                 event=(seen or real)[0])
        if not seen:
            fail(f"After micro-batch {i + 1} the optimizer's class step ran without optimizer.step() on the "
                 "optimizer you were given (type(optimizer).step(optimizer)?): call optimizer.step().",
                 event=real[0])


def _window_words(update, counts):
    """'Update 2 (the window of micro-batches 4-6, with 24, 45 and 6 valid tokens, 75 in all; step at line 9)'."""
    valid, _ = counts
    n = [valid[i] for i in update.window]
    tokens = (f"with {', '.join(map(str, n[:-1]))} and {n[-1]} valid tokens, {sum(n)} in all" if len(n) > 1
              else f"with {n[0]} valid tokens")
    line = f"; step at line {update.event['line']}" if update.event.get("line") else ""
    return f"Update {update.number} (the window of {windows.span(update.window)}, {tokens}{line})"


@check("gradient-of-its-window")
def test_each_update_holds_its_window_and_only_it(events, updates, counts):
    if not updates:
        fail("The optimizer never stepped, so the model did not learn.")
    for update in updates:
        where = f" (line {update.event['line']})" if update.event.get("line") else ""
        if update.window is None:
            fail(f"Update {update.number}{where} ran before any backward().", event=update.event)
        if update.got is None:
            fail(f"Update {update.number}{where} saw no gradient for some parameter.", event=update.event)
        update_words = _window_words(update, counts)
        total = sum(counts[0][i] for i in update.window)
        if update.previous is not None:
            again = ("the previous update's whole gradient again" if abs(update.previous - 1) < 0.01
                     else f"{update.previous:.3g} times the previous update's gradient")
            fail(f"{update_words} used its window's gradient plus {again}: the gradients were not cleared "
                 "after the previous step, so every update adds up all the windows before it. Call "
                 "optimizer.zero_grad() after each optimizer.step().", event=update.event)
        if update.residual > windows.FIT_RESIDUAL:
            fail(f"{update_words} used a gradient that no weighting of its "
                 f"window's micro-batches explains: {update.residual:.1%} of it is something else (gradients of "
                 "an earlier window left in .grad, or a loss over other tokens than the valid ones).",
                 event=update.event)
        dropped = [i for i, w in zip(update.window, update.weights) if abs(w) * total < windows.DROPPED]
        if dropped:
            kept = [i + 1 for i in update.window if i not in dropped]
            cleared = _zero_grad_inside(events, update)
            by = f" by optimizer.zero_grad(){at(cleared)}" if cleared else ""
            fail(f"{update_words} holds the gradient of micro-batch{'es' if len(kept) > 1 else ''} {_and(kept)} "
                 f"only: micro-batch{'es' if len(dropped) > 1 else ''} {_and([i + 1 for i in dropped])} contributed "
                 f"nothing, so {'their' if len(dropped) > 1 else 'its'} gradient was cleared{by} (or never computed) "
                 "before the step. Clear the gradients once per window, after its step, never between its "
                 "micro-batches.", event=cleared or update.event)


def _and(numbers):
    return " and ".join([", ".join(map(str, numbers[:-1])), str(numbers[-1])]) if len(numbers) > 1 else str(numbers[0])


def _zero_grad_inside(events, update):
    """The first optimizer.zero_grad() between the window's first backward and its step: the call to mark."""
    backwards = of_kind(events, "backward")
    if len(backwards) <= update.window[0]:
        return None
    start = backwards[update.window[0]]["index"]
    return next((e for e in of_kind(events, "optimizer.zero_grad") if start < e["index"] < update.event["index"]),
                None)


def _explain(update, counts):
    """How the learner's gradient weighed the window's tokens, in words (windows.py's fit)."""
    valid, padded = counts
    window = list(update.window)
    n = [valid[i] for i in window]
    total = sum(n)
    w = update.weights
    mean = f"a token mean over the window weighs every token 1/{total}"
    if all(windows.same(x, w[0]) for x in w):
        d = 1 / w[0]
        known = [(sum(padded[i] for i in window), "the window's positions, padding included: count only the labels "
                  "that are not -100"),
                 (sum(valid), "the valid tokens of the whole run, not of this window"),
                 (sum(valid) / len(scenario.windows()), "the run's average window; this one holds "
                  f"{total}, and windows differ"),
                 (1.0, "nothing: the summed loss was not divided")]
        why = next((text for value, text in known if windows.same(d, value)), None)
        said = f"{d:.4g}, " + why if why else f"{d:.4g}"
        return (f"every token weighed the same, {windows.one_over(w[0])}: the loss was divided by {said}; "
                f"{mean}.")
    per_batch = [x * m for x, m in zip(w, n)]  # each micro-batch's share of the update
    if all(windows.same(x, per_batch[0]) for x in per_batch):
        k = 1 / per_batch[0]
        how = (f"each micro-batch's mean loss divided by {k:.3g}" if not windows.same(k, 1)
               else "each micro-batch's mean loss, not divided")
        if windows.same(k, scenario.ACCUM_STEPS) and len(window) < scenario.ACCUM_STEPS:
            how += f" (accum_steps, though this short window holds {len(window)})"
        tokens = ", ".join(f"micro-batch {i + 1}'s {windows.one_over(x)}" for i, x in zip(window, w))
        return (f"each micro-batch counted the same whatever its tokens ({how}): each token weighed {tokens}, "
                f"where {mean}. Sum each micro-batch's loss (reduction=\"sum\") and divide by the window's "
                f"valid tokens, {total}.")
    tokens = ", ".join(f"micro-batch {i + 1}'s ({m} tokens) {windows.one_over(x)}" for i, x, m in zip(window, w, n))
    divisors = _and([f"{1 / x:.3g}" for x in w])
    return (f"its tokens weighed {tokens}, where {mean}: the micro-batches' summed losses were divided by different "
            f"counts ({divisors}), not all by the window's {total}. Count the valid tokens of the whole window "
            "before its first backward.")


@check("token-weighted")
def test_each_update_uses_the_token_mean_of_its_window(events, updates, counts):
    backwards = of_kind(events, "backward")
    for update in updates:
        if update.error <= windows.GRAD_TOLERANCE:
            continue
        # Mark the window's last backward, where the loss is (or should be) divided, not the step.
        mark = backwards[update.window[-1]] if update.window[-1] < len(backwards) else update.event
        fail(f"{_window_words(update, counts)} used a gradient that "
             f"differs from the window's token-mean gradient by up to {update.error:.1%} of its largest entry "
             f"(allowed: {windows.GRAD_TOLERANCE:.1%}): {_explain(update, counts)}", event=mark)


@pytest.fixture(scope="module")
def reference_run(run):
    """A correct run here in the grading process: the initial weights, and the weights after each window."""
    return reference.run(run["seed"], run["device"])


def _differs(got, reference, k):
    """(parameter, difference, allowed) where `got` differs from the correct run's weights after `k` windows,
    else None."""
    initial, want = reference[0], reference[k]
    for name, w in want.items():
        if name not in got or got[name].shape != w.shape:
            return name, float("inf"), 0.0
        allowed = OUTCOME_TOLERANCE * float((w - initial[name]).abs().max()) + 1e-6
        diff = float((got[name] - w).abs().max())
        if not diff <= allowed:
            return name, diff, allowed
    return None


@check("matches-reference-run")
def test_weights_follow_a_correct_run(observed, updates, reference_run):
    # The weights each later step saw are those after the windows before it.
    for update in updates[1:len(scenario.windows())]:
        gap = _differs(update.event["params"], reference_run, update.number - 1)
        if gap:
            name, diff, allowed = gap
            fail(f"After window {update.number - 1} the weights differ from a correct run's by up to {diff:.3g} in "
                 f"'{name}' (allowed: {allowed:.3g}, 1% of the correct run's largest change so far). Each window must "
                 "update the weights once, with its token-mean gradient and the learning rate you were given.",
                 event=update.event)
    gap = _differs(observed.get("final_params") or {}, reference_run, len(scenario.windows()))
    if gap:
        name, diff, allowed = gap
        fail(f"After training the weights differ from a correct run's by up to {diff:.3g} in '{name}' (allowed: "
             f"{allowed:.3g}, 1% of the correct run's largest change). Each of the {len(scenario.windows())} "
             "windows must update the weights once, with its token-mean gradient and the learning rate you were given.")
