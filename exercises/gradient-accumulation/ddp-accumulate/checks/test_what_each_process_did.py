"""What the verdict shows (grader/core/display.py): the all-reduces each micro-batch's backward made in your
process, as its own comm hook counted them, against a correct no_sync loop (one per window's last
micro-batch), with the total the grader's process counted."""
import scenario
from grader.checks.grading.judging import figure, show, table_figure


@figure
def test_show_the_all_reduces(observed, outside):
    counts = observed["learner"].get("allreduces") or []
    rows, marked = [], []
    for i in range(scenario.MICRO_BATCHES):
        count = counts[i] if i < len(counts) else None
        want = "yes" if scenario.ends_window(i) else "no"
        rows.append([i + 1, want, count])
        if count is not None and ((count == 0) if want == "yes" else bool(count)):
            marked.append(i)
    total = (outside["grader_rank"] or {}).get("allreduces")
    show(figure=table_figure(
        "all-reduces", "Gradient all-reduces per micro-batch",
        ["micro-batch", "ends a window", "buckets your process sent"], rows,
        "A correct loop sends nothing for micro-batches inside a window (model.no_sync()) and the accumulated "
        "gradients at each window's last one; marked rows differ from that."
        + (f" The grader's process counted {total} all-reduces in all; a correct loop makes "
           f"{len(scenario.windows())}." if total is not None else ""),
        f"Table of {scenario.MICRO_BATCHES} micro-batches: whether each ends a window, and how many gradient buckets "
        "your process all-reduced during its backward, as its own comm hook counted.",
        marked_rows=marked))
