"""Checks for gradient-accumulation/ddp-accumulate, run in the grading process."""
import scenario
from grader.checks.grading import ddp
from grader.checks.grading.judging import check, early_allreduces, fail, fail_if_too_many_allreduces, where_early
from reference import reference_params


@check("runs")
def test_your_process_completes(observed, outside):
    report = observed["learner"]
    if report.get("failed"):
        fail(f"Your process could not run your function: {report['failed']}", hint="")
    error = report["error"]
    if error:
        fail(f"train failed. {ddp.explained(error['message'], outside['grader_rank'])}",
             error["line"])


def _early(observed):
    return early_allreduces(observed["learner"].get("allreduces") or [], scenario.ends_window)


def _where(observed):
    return where_early(observed["learner"].get("allreduces") or [], scenario.ends_window)


def _windows_text():
    return ", ".join(f"{w[0] + 1}-{w[-1] + 1}" if len(w) > 1 else f"{w[0] + 1}" for w in scenario.windows())


@check("syncs-once-per-window")
def test_one_all_reduce_per_window(observed, outside):
    report, windows = outside["grader_rank"], len(scenario.windows())
    count = fail_if_too_many_allreduces(report, windows, "rank 0", _where(observed))
    if count < windows:
        together = _ranks_agree(observed, outside)
        steps = observed["learner"].get("steps")
        unapplied = isinstance(steps, int) and steps < windows
        why = ("your processes still ended on the same weights (their gradients were averaged some other way, "
               "e.g. a dist.all_reduce of your own), but the exercise is DDP's own sync, which overlaps the "
               "communication with backward" if together else
               f"the processes' weights part ways (they ended apart here: your process stepped {steps} "
               f"time{'s' if steps != 1 else ''} for {windows} windows, so a window was neither synced nor applied)"
               if unapplied else
               "each process steps on its own gradients and their weights drift apart (they ended apart here)")
        fail(f"Your process all-reduced the gradients {count} time{'s' if count != 1 else ''} for {windows} windows "
             f"through DDP, counted by the grader's own process (rank 0): a window's last backward must "
             f"all-reduce, or {why}. Run the window's last micro-batch outside `model.no_sync()`, and through "
             "`model`, not `model.module`.")
    if report["error"]:
        fail(f"The grader's own process (rank 0) could not follow your process's collectives: "
             f"{report['error']}.", hint="")
    early = _early(observed)
    if early:
        fail(f"Your process all-reduced once per window, but after micro-batch{'es' if len(early) > 1 else ''} "
             f"{', '.join(map(str, early))}, which do{'es' if len(early) == 1 else ''} not end a window (windows: "
             f"micro-batches {_windows_text()}; counted by your process's own DDP comm hook): DDP all-reduces what "
             "has accumulated when that backward runs, so the micro-batches after it in the window were never "
             "averaged across the processes. Run every micro-batch but the window's last inside "
             "`with model.no_sync():`, and the last one outside it.")


def _ranks_agree(observed, outside):
    """Whether both processes ended on the same weights (what "drift apart" would deny)."""
    mine, theirs = observed["learner"].get("params_after"), (outside["grader_rank"] or {}).get("params_after")
    if not mine or not theirs or set(mine) != set(theirs):
        return False
    return all(mine[n].shape == theirs[n].shape and float((mine[n] - theirs[n]).abs().max()) <= 1e-5 for n in mine)


@check("matches-reference")
def test_both_processes_match_a_large_batch_run(observed, outside, run):
    want = reference_params(run["seed"], outside["grader_rank_seed"])
    tolerance = 1e-4 * max(1.0, max(float(w.abs().max()) for w in want.values()))
    ranks = [("Your process", observed["learner"].get("params_after")),
             ("The grader's process (rank 0)", (outside["grader_rank"] or {}).get("params_after"))]
    for who, got in ranks:
        if not got:
            fail(f"{who} reported no weights after training.")
        name, diff = max(((n, float((got[n] - w).abs().max()) if n in got and got[n].shape == w.shape else float("inf"))
                          for n, w in want.items()), key=lambda t: t[1])
        if not diff <= tolerance:
            fail(f"After training, {who[0].lower() + who[1:]}'s weights differ from a correct large-batch run by up to "
                 f"{diff:.3g} (in '{name}'). Each window's update should use the mean gradient of all its samples on "
                 "both processes: divide each loss by its window's size (the last window is shorter: "
                 f"{len(scenario.windows()[-1])} micro-batches, not accum_steps), one all-reduce at the window's end "
                 "(DDP averages over the processes itself), then step and clear.")
