"""What the verdict shows (grader/display.py): the all-reduces each micro-batch's backward made, per process,
against a correct no_sync loop (one per window's last micro-batch)."""
import scenario
from grader.checks.judging import figure, show, table_figure


@figure
def test_show_the_all_reduces(observed):
    reports = sorted(observed["ranks"], key=lambda r: r["rank"])
    rows, marked = [], []
    for i in range(scenario.MICRO_BATCHES):
        counts = [r["allreduces"][i] if i < len(r["allreduces"]) else None for r in reports]
        want = "yes" if scenario.ends_window(i) else "no"
        rows.append([i + 1, want, *counts])
        if any((c == 0) if want == "yes" else bool(c) for c in counts if c is not None):
            marked.append(i)
    show(figure=table_figure(
        "all-reduces", "Gradient all-reduces per micro-batch",
        ["micro-batch", "ends a window", *[f"buckets sent by process {r['rank']}" for r in reports]], rows,
        "A correct loop sends nothing for micro-batches inside a window (model.no_sync()) and the "
        "accumulated gradients at each window's last one; marked rows differ from that.",
        f"Table of {scenario.MICRO_BATCHES} micro-batches: whether each ends a window, and how many gradient "
        f"buckets each of the {len(reports)} processes all-reduced during its backward.",
        marked_rows=marked))
