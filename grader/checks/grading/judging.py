"""What an exercise's `checks/test_*.py` imports. Checks run in the grading process, after the learner's
code ran, with pytest; each test belongs to one check of exercise.yaml:

    from grader.checks.grading.judging import check, fail

    @check("scaled-backward")
    def test_backward_on_scaled_loss(observed):
        for event in of_kind(observed["events"], "backward"):
            if event["on"] != "scaled":
                fail("backward ran on the raw loss", line=event["line"])

Fixtures: `observed` (what probe() returned, with `events`, the grading side's copy of the recorded
stream: grader.checks.grading.events), `run` (seed, device 'cuda' or 'cpu', emulated, entry), `outside` (what the
exercise's referee measured, checks/referee.py). Build references with `scenario.build(run["seed"], ...)`.

A check id may be shared by several tests; the check passes when all pass, with the first failure's
message. `fail(message, line=, hint=)` fails with the submission line to mark and, optionally, another
hint than exercise.yaml's; `explained_by(check_id, message, line)` fails saying another check's failure
explains this one (reported "skipped"). Plain `assert` works too. `fail(..., event=e)` names the recorded
event the failure is about: its line is marked, and its row in the verdict's timeline.

Pictures in the verdict (grader/core/display.py): a test marked `@figure` (no check of its own; if it raises,
the verdict goes on without its picture) calls `show(trace=timeline(...))` or `show(figure=...)` with a
`line_figure`, `bar_figure` or `table_figure`. Every figure has a title, axis labels with units, a
one-line caption saying what to look for and a text alternative.
"""
from __future__ import annotations

from grader.checks.grading.checking import CheckFailed, check, explained_by, fail, figure, show
from grader.checks.grading.events import EVENTS, EventKind
from grader.checks.grading.verdicts import (
    Event,
    at,
    autocast_dtype,
    between_backwards,
    calls,
    check_autocast_scope,
    check_faster,
    check_grads_cleared,
    check_overflowing_step_skipped,
    check_returned_losses,
    check_scaled_backward,
    check_small_gradients_survive,
    check_step_then_update,
    early_allreduces,
    fail_if_clipped_scaled_gradients,
    fail_if_too_many_allreduces,
    iterations,
    largest_difference,
    of_kind,
    speedup,
    weight_tolerance,
    weights_went_wrong,
    where_early,
)
from grader.checks.grading.verdicts import (
    divisor as backward_divisor,
)
from grader.core.display import bar_figure, line_figure, table_figure, timeline

__all__ = [
    "check", "fail", "explained_by", "CheckFailed",
    "EVENTS", "EventKind", "Event", "of_kind", "calls", "iterations", "between_backwards", "at", "autocast_dtype",
    "check_autocast_scope", "check_scaled_backward", "check_step_then_update", "check_grads_cleared",
    "check_returned_losses", "check_overflowing_step_skipped", "check_small_gradients_survive",
    "largest_difference", "weight_tolerance", "weights_went_wrong",
    "fail_if_clipped_scaled_gradients", "backward_divisor", "speedup", "check_faster",
    "early_allreduces", "where_early", "fail_if_too_many_allreduces",
    "figure", "show", "timeline", "line_figure", "bar_figure", "table_figure",
]
