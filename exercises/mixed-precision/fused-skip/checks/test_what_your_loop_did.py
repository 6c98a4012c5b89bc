"""What the verdict shows of the learner's loop (grader/core/display.py): each batch's scale, whether the
fused optimizer's step() was called, whether the update really ran, and where the loop advanced the warm-up;
the learning rate against a correct loop's."""
import pytest

import batches
import reference as correct_loop
from grader.checks.judging import figure, show, table_figure


@pytest.fixture(scope="module")
def reference(run):
    return correct_loop.reference(run["seed"], run["device"])


@figure
def test_show_each_batch(observed, reference):
    rows, marked = [], []
    for span in batches.spans(observed):
        before, after = span["scales"] or (None, None)
        scale = f"{batches.scale_words(before)} → {batches.scale_words(after)}" if before is not None else "-"
        advances = span["advances"]
        warmup = ("yes" + "".join(f" (line {line})" for line in advances if line)) if advances else "no"
        if span["number"] == 0 or bool(advances) != span["real"] or len(advances) > 1:
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
