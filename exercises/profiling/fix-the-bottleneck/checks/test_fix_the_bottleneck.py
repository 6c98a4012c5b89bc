"""Checks for profiling/fix-the-bottleneck, run in the grading process."""
import math

import pytest

import scenario
from grader.checks.grading.judging import check, check_faster, fail, figure, show, table_figure

# The bar and the number of rounds: scenario.py (the referee stops the rounds once the verdict is known).
MIN_SPEEDUP = scenario.MIN_SPEEDUP


def _of(observed, kind):
    return [e for e in observed["events"] if e["event"] == kind]


def _at(event):
    return f" (line {event['line']})" if event.get("line") else ""


@pytest.fixture(scope="module")
def reference(run, outside):
    """The original step on the replay's data (drawn by the grading side, referee.py)."""
    if outside["replay_seed"] is None:
        fail("The grader never got to replay your train_step (see the other checks' messages).")
    model, optimizer, loss_fn, batches = scenario.build(outside["replay_seed"], run["device"])
    losses = [float(scenario.slow_train_step(model, optimizer, loss_fn, x, y)) for x, y in batches]
    return {"losses": losses, "params_after": scenario.params(model)}


@check("profiler-used")
def test_step_profiled_with_labels(observed):
    entered = _of(observed, "profile.enter")
    if not entered:
        fail("find_bottleneck never started torch.profiler.profile: run the steps inside "
             "`with torch.profiler.profile(...) as prof:`.")
    calls = _of(observed, "call")
    if not any(c["profiling"] for c in calls):
        fail(f"The profiler started{_at(entered[0])}, but train_step's preprocess never ran while it was "
             "active: call train_step inside the `with profile(...)` block.", entered[0].get("line"))
    labels = {e["label"] for e in _of(observed, "label.enter") if e["profiling"]}
    if len(labels) < 2:
        found = f" (only {sorted(labels)[0]!r})" if labels else ""
        fail(f"The profiled steps had fewer than two labelled regions{found}. Wrap the parts of train_step in "
             "`with record_function('preprocess'):`, `with record_function('forward'):` and so on, so the "
             "table shows where the time goes.")


# Where the time went in each of the two profiled runs (the grading side's order: outside["profiled_runs"]),
# in the messages' words.
SPOTS = {
    "preprocess": {"call": "the original preprocess (swapped back in)",
                   "unlabelled": "preprocess, where the original step spends its time, ran outside every "
                                 "labelled region: put it in a `with record_function(...)` block of its own.",
                   "situation": "the original step spends its time ({ms} in {n} calls) in preprocess"},
    "forward": {"call": "the model",
                "unlabelled": "In the grader's profiled run with a slow model forward, the time went into the "
                              "model, which ran outside every labelled region: put the model call in a "
                              "`with record_function(...)` block of its own.",
                "situation": "in the grader's profiled run with a slow model forward (a wait of "
                             f"{scenario.SLOW_FORWARD_S * 1000:.0f} ms per call), the time went into the model "
                             "({ms} in {n} calls)"},
}


@check("names-bottleneck")
def test_names_the_real_bottleneck(observed, outside):
    plan = outside["profiled_runs"]
    for spot in scenario.SLOW_SPOTS:  # the original step's bottleneck is judged first
        if spot not in plan or plan.index(spot) >= len(observed["named"]):
            fail("find_bottleneck did not complete both of the grader's profiled runs.")
        _judge_profiled_run(observed, plan.index(spot), spot)


def _judge_profiled_run(observed, index, spot):
    words = SPOTS[spot]
    named = observed["named"][index]
    if named is None:
        fail(f"find_bottleneck returned {observed['named_type'][index]}; return the label of the slowest region "
             "(a string).")
    calls = [c for c in _of(observed, "call") if c.get("run") == index and c["name"] == spot]
    if not calls:
        fail(f"train_step never called {words['call']}, so the grader could not see where its time went.")
    where = {tuple(c["labels"]) for c in calls}
    innermost = {labels[-1] if labels else None for labels in where}
    if innermost == {None}:
        fail(words["unlabelled"])
    if named not in innermost:
        enclosing = sorted({label for labels in where for label in labels[:-1]})
        hint = (f" '{named}' encloses it, along with everything else in that region; name the innermost one."
                if named in enclosing else "")
        if spot == "forward":
            hint += (" find_bottleneck must read the answer from the profile (the largest total among your "
                     "labels), not return a fixed one.")
        situation = words["situation"].format(ms=f"{sum(c['seconds'] for c in calls) * 1000:.0f} ms", n=len(calls))
        fail(f"You named '{named}', but {situation}, which ran in the region "
             f"'{sorted(x for x in innermost if x)[0]}'.{hint}")
    # The right region, named without reading the profile (a clock around the same regions names it too):
    # the exercise is to read it from the profile.
    if not [e for e in _of(observed, "profile.key_averages") + _of(observed, "profile.events") if e.get("run") == index]:
        fail(f"You named '{named}', the right region, but your find_bottleneck never read the profile in that "
             "run: it called neither `prof.key_averages()` nor `prof.events()`. Read the answer from the "
             "profiler's table (the largest `cpu_time_total` among your labels), not from another clock.")


@check("same-result")
def test_timed_steps_compute_the_same(outside):
    """The steps the grader timed are checked too, so a step that skips its work when timed fails here."""
    for r in outside["rounds"]:
        learner, original = r["learner_losses"], r["original_losses"]
        for i, want in enumerate(original):
            got = learner[i] if i < len(learner) else None
            if got is None or not math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-6):
                fail(f"In the grader's timing round {r['index']}, your train_step's loss on step {i + 1} was "
                     f"{'missing' if got is None else f'{got:.6g}'}; the original step's was {want:.6g} on the same "
                     "data. The fix must compute the same standardization.")
        _compare_weights(r["learner_params"], r["original_params"],
                         f"In the grader's timing round {r['index']}, after its {len(original)} steps your weights",
                         "Every timed step must update the weights as the original does.")


def _compare_weights(got, want, when, why):
    for name, w in want.items():
        g = got.get(name)
        if g is None or g.shape != w.shape:
            fail(f"{when} were not all reported: '{name}' was missing or had another shape.")
        diff = float((g - w).abs().max())
        if not diff <= 1e-4 * max(1.0, float(w.abs().max())):
            fail(f"{when} differ from the original step's by up to {diff:.3g} (in '{name}'). {why}")


@check("same-result")
def test_fixed_step_computes_the_same(observed, reference):
    losses = observed["losses"]
    for i, (got, want) in enumerate(zip(losses, reference["losses"])):
        if got is None:
            fail(f"train_step returned something that is not a loss on step {i + 1}; return loss.detach().")
        if not math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-6):
            fail(f"Step {i + 1}: your train_step's loss is {got:.6g}, the original step's is {want:.6g}. "
                 "The fix must compute the same standardization.")
    _compare_weights(observed["params_after"], reference["params_after"], f"After {len(losses)} steps the weights",
                     "The fix must compute the same standardization.")


@check("faster")
def test_fixed_step_is_faster(outside, run):
    check_faster(outside, MIN_SPEEDUP[run["device"]], "step", "The time goes into the Python loop over samples.")


# -- what the verdict shows (grader/core/display.py) ------------------------------------------------------------

@figure
def test_show_the_profile(observed, outside):
    """The learner's own profiler table for the original step, and the region the grader expected."""
    index = outside["profiled_runs"].index("preprocess")
    tables = [e for e in _of(observed, "profile.key_averages") if e.get("run") == index and e.get("rows")]
    calls = [c for c in _of(observed, "call") if c.get("run") == index and c["name"] == "preprocess"]
    expected = next((c["labels"][-1] for c in calls if c["labels"]), None)
    rows = tables[-1]["rows"] if tables else []
    named = observed["named"][index] if index < len(observed["named"]) else None
    show(figure=table_figure(
        "profile", "Your profiler's table (your own regions)", ["region", "total CPU time (ms)", "calls"], rows,
        f"The slow preprocessing ran in the region '{expected}'; your find_bottleneck named '{named}'. "
        "A region's total includes the regions inside it: look for the innermost region with the largest "
        "total." if expected else
        "The slow preprocessing ran outside every region you labelled: label it to see it here.",
        f"Table of {len(rows)} regions from your key_averages(), slowest first; the marked row is the region "
        "the grader expected.",
        marked_rows=[i for i, row in enumerate(rows) if row[0] == expected]))
