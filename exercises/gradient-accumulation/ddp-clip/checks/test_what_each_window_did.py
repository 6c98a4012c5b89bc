"""What the verdict shows (grader/core/display.py): per window, the norm of the gradient DDP all-reduced
(measured on the grader's rank 0, which holds the same gradient as yours), the norm your process's step
used after your clipping, and a correct run's, against max_norm."""
import scenario
import windows as recorded
from grader.checks.grading.judging import bar_figure, figure, of_kind, show
from reference import reference


@figure
def test_show_the_norms_per_window(observed, outside, run):
    want = reference(run["seed"], outside["grader_rank_seed"], outside["spike"])
    synced = (outside["grader_rank"] or {}).get("synced_norms") or []
    used = [[e.get("grad_norm") for e in of_kind(span, "optimizer.class_step")][:1]
            for span in recorded.spans(observed["events"])]
    bars, skipped = [], []
    for j in range(len(scenario.windows())):
        if want["norm_after"][j] is None:
            skipped.append(str(j + 1))
            continue
        if j < len(synced) and synced[j] is not None:
            bars.append((f"window {j + 1}: all-reduced, before clipping", synced[j], "reference"))
        bars.append((f"window {j + 1}: a correct step uses", want["norm_after"][j], "reference"))
        if j < len(used) and used[j] and used[j][0] is not None:
            bars.append((f"window {j + 1}: your step used", used[j][0], "yours"))
    bars.append(("max_norm", scenario.MAX_NORM, "limit"))
    show(figure=bar_figure(
        "norms", "Gradient norm per window, before and after clipping", "total 2-norm of the gradients",
        f"The loud full windows are clipped to max_norm ({scenario.MAX_NORM:g}); the quiet last window is under it "
        "and a correct step leaves it as it is. Your step's bar should match the correct step's in every window. "
        f"Window {', '.join(skipped)} overflowed: a correct step skips it, so it has no bar.",
        "Bar chart: for each window that was not skipped, the norm of the all-reduced gradient before clipping "
        "(measured on the grader's process), the norm a correct clipped step uses, and the norm your process's "
        "optimizer step used; a line at max_norm.",
        bars))
