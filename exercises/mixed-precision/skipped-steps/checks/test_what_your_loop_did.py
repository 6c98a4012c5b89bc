"""What the verdict shows of the learner's loop (grader/core/display.py): each batch's scale, whether it
stepped, and where the loop advanced the scheduler and the EMA; the scale against a correct loop's."""
import pytest

import reference as correct_loop
import scenario
import steps
from grader.checks.grading.judging import figure, line_figure, of_kind, show, table_figure


@pytest.fixture(scope="module")
def reference(run, outside):
    return correct_loop.reference(run["seed"], run["device"], tuple(outside["outliers"]))


@figure
def test_show_each_batch(observed, reference):
    rows, marked = steps.table_rows(observed)
    numbered = sum(isinstance(row[0], int) for row in rows)  # a first row may hold what ran before batch 1
    before = " and a first row for what ran before batch 1" if numbered < len(rows) else ""
    show(figure=table_figure(
        "batches", "What your loop did in each batch",
        ["batch", "loss scale (before → after update)", "optimizer step", "scheduler.step()", "EMA update"], rows,
        "A batch whose step scaler.step skipped (the scale fell) must not advance the scheduler or the EMA, and a "
        "real step must advance both; marked rows break that.",
        f"Table of the {numbered} batches of your loop{before}: the scale before and after scaler.update(), whether the "
        "optimizer stepped or the step was skipped, and whether scheduler.step() and the EMA update ran after that "
        "step (before the next batch's).",
        marked_rows=marked))
    mine = [(i, e["scale_after"]) for i, e in enumerate(of_kind(observed["events"], "scaler.update"), 1)]
    show(figure=line_figure(
        "scale", "The loss scale after each batch", "batch", "loss scale (log)",
        "It starts at 2^24 and halves on each skipped step until the scaled gradients fit in float16 (the "
        "calibration), halves again on the outlier batches, and doubles after 3 real steps in a row.",
        "Line chart of the loss scale after each batch's scaler.update(), your run against a correct loop's.",
        {"Your run": mine, "A correct loop": [(i, after) for i, (_, after) in enumerate(reference["scales"], 1)]},
        log_y=True))
