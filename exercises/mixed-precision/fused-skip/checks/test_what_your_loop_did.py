"""What the verdict shows of the learner's loop (grader/core/display.py): each batch's scale, whether the
fused optimizer's step() was called, whether the update really ran, and where the loop advanced the warm-up;
the learning rate after each batch against a correct loop's."""
import itertools

import pytest

import batches
import reference as correct_loop
import scenario
from grader.checks.grading.judging import figure, line_figure, show, table_figure


@pytest.fixture(scope="module")
def reference(run, outside):
    return correct_loop.reference(run["seed"], run["device"], tuple(outside["outliers"]))


@figure
def test_show_each_batch(observed, reference):
    rows, marked = [], []
    seen = len(observed["advances"]) == observed["scheduler_steps"]  # every scheduler step went through the mark
    for span in batches.spans(observed):
        before, after = span["scales"] or (None, None)
        scale = f"{batches.scale_words(before)} → {batches.scale_words(after)}" if before is not None else "-"
        advances = span["advances"]
        warmup = ("yes" + "".join(f" (line {line})" for line in advances if line)) if advances else "no"
        if not seen:
            warmup = "not seen"
        elif span["number"] == 0 or bool(advances) != span["real"] or len(advances) > 1:
            marked.append(len(rows))
        rows.append(["before batch 1" if span["number"] == 0 else span["number"], scale,
                     "yes" if span["step_calls"] else "no", "ran" if span["real"] else "skipped", warmup])
    show(figure=table_figure(
        "batches", "What your loop did in each batch",
        ["batch", "loss scale (before → after update)", "optimizer.step() called", "update", "scheduler.step()"],
        rows,
        "With fused=True the optimizer's step() is called on every batch, skipped or not: only the falling scale "
        "tells a skipped update. The warm-up must advance exactly on the rows whose update ran; marked rows break "
        "that.",
        f"Table of the batches of your loop ({len(rows)} rows): the scale before and after scaler.update(), whether "
        "the optimizer's step() was called, whether the update ran or was skipped, and whether scheduler.step() ran "
        f"in that batch. A correct loop ends after {reference['real_steps']} real updates.",
        marked_rows=marked))


def _learning_rates(advanced, before=0):
    """(batch, learning rate after it) for a loop that advanced the warm-up `before` times before the first batch
    and `advanced[i]` times in batch i + 1."""
    steps = itertools.accumulate(advanced, initial=before)
    return [(i, scenario.LR * scenario.warmup(k)) for i, k in enumerate(steps) if i]


@figure
def test_show_the_warmup(observed, reference):
    if len(observed["advances"]) != observed["scheduler_steps"]:
        return  # the loop reached the scheduler past the probe's marks: they cannot tell where it advanced
    spans = batches.spans(observed)
    before = sum(len(span["advances"]) for span in spans if not span["number"])
    correct = [after >= before for before, after in reference["scales"]]
    show(figure=line_figure(
        "warmup", "The learning rate after each batch", "batch", "learning rate",
        "A correct loop's warm-up climbs only on batches whose update ran; one that climbs on skipped batches runs "
        "ahead of the weights.",
        "Line chart of the learning rate after each batch, as the scheduler steps of your loop set it, against a "
        "correct loop's, which advances the warm-up on real updates only.",
        {"Your run": _learning_rates([len(span["advances"]) for span in spans if span["number"]], before),
         "A correct loop": _learning_rates([int(real) for real in correct])}))
