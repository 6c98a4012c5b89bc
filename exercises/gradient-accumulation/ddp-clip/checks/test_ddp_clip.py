"""Checks for gradient-accumulation/ddp-clip, run in the grading process.

The learner's process is rank 1 of the gloo group; rank 0 is the grading side's own (grader_rank.py),
which counts the all-reduces rank 1 joins and runs a correct clipped loop on data the learner's process
never sees, one of whose micro-batches overflows its window. Both ranks' weights after every window are
compared with each other and with a one-process run of the same windows (reference.py)."""
import math

import pytest

import scenario
import windows as recorded
from grader.checks.grading import ddp
from grader.checks.grading.judging import at, check, early_allreduces, fail, fail_if_too_many_allreduces, of_kind, where_early
from grader.checks.grading.verdicts import check_step_then_update
from reference import reference as correct_run

MAX_NORM = scenario.MAX_NORM
# clip_grad_norm_ scales by max_norm / (norm + 1e-6): the clipped norm is max_norm to ~1e-5 here.
NORM_TOLERANCE = 1e-3
# Both ranks and the reference compute in float32 on the same data; the scale is a power of two, so they
# differ only by summation order, ~1e-7 (measured); a wrong window moves a weight by 1e-4 or more.
WEIGHT_TOLERANCE = 1e-5


@pytest.fixture
def reference(run, outside):
    return correct_run(run["seed"], outside["grader_rank_seed"], outside["spike"])


def _overflowing(outside) -> int:
    """The window whose all-reduced gradient overflowed (the referee's secret spike is in it)."""
    return scenario.window_of(outside["spike"])


def _window_text(j: int) -> str:
    window = scenario.windows()[j]
    return f"window {j + 1} (micro-batches {window[0] + 1}-{window[-1] + 1})"


def _windows_text():
    return ", ".join(f"{w[0] + 1}-{w[-1] + 1}" for w in scenario.windows())


@check("runs")
def test_your_process_completes(observed, outside):
    report = observed["learner"]
    if report.get("failed"):
        fail(f"Your process could not run your function: {report['failed']}", hint="")
    error = report["error"]
    if error and "unscale_() has already been called" in error["message"]:
        fail(f"train failed. {error['message']} With accumulation one optimizer step is one window: the gradients "
             "of its micro-batches add up still multiplied by the loss scale, and are unscaled once, after the "
             "window's last backward.", error["line"],
             hint="Call scaler.unscale_(optimizer) and clip only when the micro-batch ends its window, right before "
                  "scaler.step(optimizer).")
    if error:
        fail(f"train failed. {ddp.explained(error['message'], outside['grader_rank'])}",
             error["line"])


def _early(observed):
    return early_allreduces(observed["learner"].get("allreduces") or [], scenario.ends_window)


def _where(observed):
    return where_early(observed["learner"].get("allreduces") or [], scenario.ends_window)


@check("syncs-once-per-window")
def test_one_all_reduce_per_window(observed, outside):
    report, windows = outside["grader_rank"], len(scenario.windows())
    count = fail_if_too_many_allreduces(report, windows, "rank 0", _where(observed))
    if count < windows:
        fail(f"Your process all-reduced the gradients {count} time{'s' if count != 1 else ''} for {windows} windows "
             "through DDP, counted by the grader's own process (rank 0): every window's last backward must "
             "all-reduce, or the processes clip and step on gradients that were never averaged. Run the window's "
             "last micro-batch outside `model.no_sync()`, and through `model`, not `model.module`.")
    if report["error"]:
        fail(f"The grader's own process (rank 0) could not follow your process's collectives: {report['error']}.",
             hint="")
    early = _early(observed)
    if early:
        fail(f"Your process all-reduced once per window, but after micro-batch{'es' if len(early) > 1 else ''} "
             f"{', '.join(map(str, early))}, which do{'es' if len(early) == 1 else ''} not end a window (windows: "
             f"micro-batches {_windows_text()}; counted by your process's own DDP comm hook): the micro-batches "
             "after it in the window were never averaged across the processes. Run every micro-batch but the "
             "window's last inside `with model.no_sync():`, and the last one outside it.")


CLIP_ORDER = ("after the window's last backward: scaler.unscale_(optimizer), "
              "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm), scaler.step(optimizer)")


def _synced_once_per_window(observed, outside):
    """Whether every window all-reduced once, at its end (what syncs-once-per-window holds to): only then did
    each step use a correct run's averaged gradient, whose norm before clipping is the reference's."""
    report = outside["grader_rank"]
    return (bool(report) and not report["error"] and report["allreduces"] == len(scenario.windows())
            and not _early(observed))


@check("unscale-then-clip")
def test_each_window_unscaled_once_then_clipped(observed, outside, reference):
    """Judged by what each window's optimizer step used (the total norm of its gradients, read by a step
    pre-hook: max_norm on the loud windows, however the clipping was written), and by the order of the
    recorded calls where it is wrong whatever the numbers say: unscale_ or clipping before the window's last
    backward, which ran on this process's partial, scaled, not yet all-reduced sum."""
    spans, overflowing = recorded.spans(observed["events"]), _overflowing(outside)
    if len(spans) != len(scenario.windows()):
        fail(f"Your process called the model for {len(of_kind(observed['events'], 'forward'))} micro-batches of "
             f"{scenario.MICRO_BATCHES}, so no window can be judged: run every micro-batch once, in order.")
    for j, span in enumerate(spans):
        where = _window_text(j)
        steps = of_kind(span, "optimizer.class_step")
        step = steps[0] if steps else None
        late = [c for c in of_kind(span, "clip") if step and c["index"] > step["index"]]
        span = [e for e in span if not step or e["index"] <= step["index"]]
        unscales = [e for e in of_kind(span, "scaler.unscale_") if not e.get("internal")]
        backwards = of_kind(span, "backward")
        last = backwards[-1]["index"] if backwards else -1
        if len(unscales) > 1:
            fail(f"In {where} your process called scaler.unscale_(optimizer) {len(unscales)} times{at(unscales[1])}: "
                 "once per window, " + CLIP_ORDER + ".", unscales[1].get("line"))
        early_unscale = [e for e in unscales if e["index"] < last]
        if early_unscale:
            fail(f"In {where} scaler.unscale_(optimizer){at(early_unscale[0])} ran before the window's last "
                 "backward: it divided the gradients accumulated so far by the loss scale, and the next backward "
                 "added gradients still multiplied by it (65536 at first) on top; scaler.step then did not unscale again. "
                 "Unscale once, " + CLIP_ORDER + ".", early_unscale[0].get("line"))
        clips = of_kind(span, "clip")
        early_clips = [c for c in clips if c["index"] < last]
        if early_clips:
            fail(f"In {where} {early_clips[0]['function']}(){at(early_clips[0])} ran before the window's last "
                 "backward, inside model.no_sync(): it clipped this process's own partial sum"
                 + ("" if early_clips[0]["after_unscale"] else ", still multiplied by the loss scale,")
                 + " before DDP all-reduced the window's gradient, so each process cut its share by a norm of its own. "
                 "Clip once per window, " + CLIP_ORDER + ".", early_clips[0].get("line"))
        if j == overflowing:
            continue  # a correct step is skipped there: steps-through-the-scaler judges it
        if not steps and of_kind(span, "scaler.step"):
            continue  # scaler.step skipped it: the gradient it was given was not finite (the outcome checks judge)
        if len(steps) != 1:
            fail(f"In {where} your process's optimizer stepped {len(steps)} times: step once per window, "
                 + CLIP_ORDER + ".", (steps[1:] or [{}])[0].get("line"))
        norm, want = step.get("grad_norm"), reference["norm_before"][j]
        if norm is None or want is None or want < MAX_NORM * (1 + NORM_TOLERANCE):
            continue  # non-finite, or a quiet window that a correct step leaves unclipped: matches-reference judges it
        by_value = [c for c in clips if c["function"] == "clip_grad_value_"]
        if norm > MAX_NORM * (1 + NORM_TOLERANCE):
            if late and not clips:
                fail(f"In {where}, {late[0]['function']}(){at(late[0])} ran after the optimizer step: the update had "
                     f"already used the unclipped gradients (total norm {norm:.3g}).", late[0].get("line"))
            if by_value:
                fail(f"In {where} your process clipped with clip_grad_value_(){at(by_value[0])}: it caps each value, "
                     f"and the gradients the step used still had a total norm of {norm:.3g}, above max_norm "
                     f"({MAX_NORM:g}). Clip their total norm: clip_grad_norm_(model.parameters(), max_norm).",
                     by_value[0].get("line"))
            if not clips and not of_kind(observed["events"], "clip"):
                fail(f"Your process never clipped: in {where} the gradients its optimizer step used had a total norm "
                     f"of {norm:.3g}, above max_norm ({MAX_NORM:g}). (Your process is rank 1: a clip under "
                     "`if dist.get_rank() == 0:`, beside the logging, runs on rank 0 only, and every process must clip "
                     "the same all-reduced gradient the same way.)", step.get("line"))
            fail(f"In {where} the gradients the optimizer step used were not clipped to max_norm: their total norm was "
                 f"{norm:.3g}, above max_norm ({MAX_NORM:g}, the argument you were given).",
                 (clips or [step])[0].get("line"))
        if norm < MAX_NORM * (1 - NORM_TOLERANCE):
            scaled = [c for c in clips if not c["after_unscale"]]
            if scaled:
                fail(f"In {where}, {scaled[0]['function']}(){at(scaled[0])} clipped the gradients before "
                     "scaler.unscale_(optimizer), while they were still multiplied by the loss scale (65536 at first): the "
                     f"step then used gradients of total norm {norm:.3g}, far below max_norm ({MAX_NORM:g}), so the "
                     "update was tiny.", scaled[0].get("line"))
            if not _synced_once_per_window(observed, outside):
                # Gradients all-reduced at other moments than a window's end are not a correct run's (with
                # never-no-sync, 2 seeds of 30 left a window's norm under max_norm unclipped): a norm below max_norm
                # then says nothing of the clipping. syncs-once-per-window fails on the grader's own count.
                continue
            fail(f"In {where} the gradients the optimizer step used had a total norm of {norm:.3g}, below max_norm "
                 f"({MAX_NORM:g}): they were cut harder than clipping to max_norm does (a correct run's norm there is "
                 f"{want:.3g} unclipped, so a correct step scales it to exactly max_norm).", (clips or [step])[0].get("line"))


def _difference(got, want):
    """(the parameter that differs most, by how much); inf for a missing or misshapen one."""
    return max(((n, float((got[n] - w).abs().max()) if got and n in got and got[n].shape == w.shape else float("inf"))
                for n, w in want.items()), key=lambda t: t[1])


def _tolerance(want):
    return WEIGHT_TOLERANCE * max(1.0, max(float(w.abs().max()) for w in want.values()))


def _initial_weights(run):
    return scenario.params(scenario.build_model(run["seed"])[0])


@check("steps-through-the-scaler")
def test_the_overflowing_window_is_skipped_and_the_scale_halved(observed, outside, run):
    """Judged by the outcome in the learner's process (its weights across the overflowing window, its scaler's
    scale after it); the recorded calls only choose the message. A step that was not skipped also shows outside:
    the learner's next all-reduce carries its non-finite (or wrongly scaled) gradient into rank 0's window."""
    if _synced_once_per_window(observed, outside):
        # The grader's spike reaches the learner's process only through the all-reduce it pairs with: syncs at
        # other moments move it to another window (never-no-sync). syncs-once-per-window fails on its own count.
        _the_overflowing_window_skipped(observed, outside, run)
    _every_window_through_the_scaler(observed)


def _every_window_through_the_scaler(observed):
    """Every window's step went through scaler.step (the recorded calls, learner evidence). The outcome alone
    cannot tell: the all-reduced gradient's inf is there for any code to see after the window's last backward,
    so a loop that skips a non-finite step by hand and calls optimizer.step() itself leaves the same weights
    and, with scaler.update(), the same scale (red team, issue 48)."""
    for j, span in enumerate(recorded.spans(observed["events"])):
        check_step_then_update(span, _window_text(j))


def _the_overflowing_window_skipped(observed, outside, run):
    k, spike = _overflowing(outside), outside["spike"]
    report = observed["learner"]
    weights, scales = report.get("weights") or [], report.get("scales") or []
    if len(weights) <= k or len(scales) <= k:
        fail(f"Your process did not reach the end of {_window_text(k)}: run every micro-batch once, in order.")
    before = _initial_weights(run) if k == 0 else weights[k - 1]
    text = _window_text(k)
    spiked = (f"{text[0].upper()}{text[1:]}'s all-reduced gradient overflowed: the grader's process's micro-batch {spike + 1} "
              "is a loss spike whose gradient, multiplied by the loss scale, is beyond float32's range, so the "
              "window's sum held inf on both processes. ")
    name, diff = _difference(weights[k], before)
    if not diff <= _tolerance(before):
        span = recorded.spans(observed["events"])[k] if len(recorded.spans(observed["events"])) > k else []
        direct = [e for e in of_kind(span, "optimizer.step") if not e.get("via_scaler")]
        backwards = of_kind(span, "backward")
        early = [e for e in of_kind(span, "scaler.unscale_") if not e.get("internal") and backwards
                 and e["index"] < backwards[-1]["index"]]
        how = (f" optimizer.step(){at(direct[0])} ran directly: only scaler.step(optimizer) checks the unscaled "
               "gradients for inf and NaN and skips the step when it finds any." if direct else
               f" scaler.step(optimizer) checks for inf and NaN only what scaler.unscale_ found, and your process's "
               f"unscale_{at(early[0])} ran before the window's last backward, whose all-reduce brought the inf: "
               "unscale once, after it." if early else
               " Step through scaler.step(optimizer), which checks the unscaled gradients for inf and NaN and skips "
               "the step when it finds any.")
        direct = direct or early
        changed = (f"changed by up to {diff:.3g} (in '{name}')" if math.isfinite(diff) else
                   f"became non-finite (in '{name}')")
        fail(spiked + f"A correct step is skipped there, and the grader's process skipped it; your process's "
             f"weights {changed} in that window instead.{how}",
             direct[0].get("line") if direct else None)
    want = (scenario.INIT_SCALE if k == 0 else scales[k - 1]) / 2
    if scales[k] != want:
        fail(spiked + f"Your process skipped the step, but its GradScaler's scale after that window was "
             f"{scales[k]:g}, not {want:g}: scaler.update() after a skipped step halves it, so that the next windows' "
             "gradients fit. Call scaler.update() after every scaler.step(optimizer), the skipped one's too.")


@check("same-weights-on-both-ranks")
def test_both_ranks_step_alike(observed, outside):
    mine = observed["learner"].get("weights") or []
    theirs = (outside["grader_rank"] or {}).get("weights") or []
    windows = len(scenario.windows())
    if len(mine) != windows:
        fail(f"Your process reached the end of {len(mine)} of the {windows} windows (micro-batches {_windows_text()}): "
             "run every micro-batch once, in order.")
    for j, (got, want) in enumerate(zip(mine, theirs)):
        name, diff = _difference(got, want)
        if not diff <= _tolerance(want):
            fail(f"After {_window_text(j)}, your process's weights differ from the grader's process's (rank 0) by up to "
                 f"{diff:.3g} (in '{name}'). Both processes held the same all-reduced gradient at the window's end, so "
                 "they applied different updates to it: every process must unscale it once, clip it to max_norm and "
                 "step through scaler.step, the same way (a clip on one rank only, or one that never takes effect, a "
                 "step that is not skipped when the gradient overflowed, make the processes drift apart).")


@check("matches-reference")
def test_both_ranks_match_a_one_process_run(observed, outside, reference):
    ranks = [("your process", observed["learner"].get("weights") or []),
             ("the grader's process (rank 0)", (outside["grader_rank"] or {}).get("weights") or [])]
    quiet = len(scenario.windows()) - 1
    for j, want in enumerate(reference["weights"]):
        for who, weights in ranks:
            if j >= len(weights):
                fail(f"After {_window_text(j)}, {who} had not stepped: a correct run steps once per window "
                     f"(micro-batches {_windows_text()}).")
            name, diff = _difference(weights[j], want)
            if diff <= _tolerance(want):
                continue
            why = ("That window's all-reduced gradient overflowed, so a correct step skips it and halves the scale."
                   if reference["norm_before"][j] is None else
                   f"That window is the short last one ({len(scenario.windows()[quiet])} micro-batches) and its "
                   f"gradient norm ({reference['norm_before'][quiet]:.3g}) is below max_norm, so a correct step leaves "
                   "it unclipped and its size counts: divide its losses by its own size, not accum_steps."
                   if j == quiet else
                   f"That window's mean gradient over both processes has a norm of {reference['norm_before'][j]:.3g}, "
                   f"so a correct step clips it to max_norm ({MAX_NORM:g}) at that norm: the window's losses divided "
                   "by its size, one all-reduce at its end (DDP averages over the processes), then unscale_ once, "
                   "clip and step.")
            rank0 = (" Rank 0 is the grader's own, correct loop: what differs is the gradient your process "
                     "all-reduced into the window's average." if who.startswith("the grader") else "")
            fail(f"After {_window_text(j)}, {who}'s weights differ from a one-process run of the same windows by up to "
                 f"{diff:.3g} (in '{name}'). {why}{rank0}")
