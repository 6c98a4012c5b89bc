"""The grading process, after the run: checks, failures and pictures, what an exercise's `checks/test_*.py`
takes through grader.checks.grading.judging (the harness's pytest plugin reads CheckFailed).

    from grader.checks.grading.judging import check, fail

    @check("scaled-backward")
    def test_backward_on_scaled_loss(observed):
        for event in observed["events"]:
            if event["event"] == "backward" and event["on"] != "scaled":
                fail("backward ran on the raw loss", line=event["line"])

A check id may be shared by several tests; the check passes when all of them pass, and its message is
the first failure's. Plain `assert` works too; `fail` adds the submission line to mark in the editor.
A failed check shows its `hint` from exercise.yaml unless `fail(..., hint=...)` says otherwise: another
hint that fits what was observed, or "" when no hint applies.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import pytest

from grader.core.protocol import as_check_id, event_index, submission_line

check = pytest.mark.check
figure = pytest.mark.figure  # a test that only draws (grader.checks.grading.judging.show)


class CheckFailed(AssertionError):
    """A check's learner-facing verdict: what happened at run time, and where.

    What a check hands over may come from the learner's process (a line a probe recorded, an observation's
    count), so it is taken as data: a `line` that is no line of the submission (text, a list, 0, a number
    past any file's length) marks none, and the message says so, as the learner's doing; an `event` that is
    no event index marks no row; a `hint` that is not text, or an `explained_by` that is no check id, is
    not used. The verdict then always fits its schema (grader/core/schemas/raw-verdict.json): a malformed
    value can never make the grading look like the grader's own failure."""

    def __init__(self, message: str, line: int | None = None, hint: str | None = None,
                 explained_by: str | None = None, event: int | None = None):
        message = message if isinstance(message, str) else str(message)
        if line is not None and submission_line(line) is None:
            message += (f" (Your code's process reported {_reported(line)} as the line of this, which is not a "
                        "line of your file: no line is marked.)")
        super().__init__(message)
        self.message = message
        self.line = submission_line(line)
        self.hint = hint if isinstance(hint, str) else None  # None: the check's own hint from exercise.yaml
        self.explained_by = as_check_id(explained_by)
        self.event = event_index(event)  # the recorded event (its "index") this failure is about: the timeline marks it


def _reported(value: object) -> str:
    """What the learner's process sent as a line, in a few words."""
    if isinstance(value, str):
        return f"the text {value[:20]!r}" + ("..." if len(value) > 20 else "")
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value}" if abs(value) < 10**12 else f"a number of {len(str(abs(value)))} digits"
    if isinstance(value, float):
        return f"{value:g}"
    return f"a {type(value).__name__}"


def fail(message: str, line: int | None = None, hint: str | None = None,
         event: dict[str, Any] | None = None) -> NoReturn:
    """The check fails with `message`. `event`: the recorded event it is about (a dict of
    observed["events"]); its line is marked in the editor and its row in the verdict's timeline."""
    if not isinstance(event, dict):
        event = None
    if event is not None and line is None:
        line = event.get("line")
    raise CheckFailed(message, line, hint, event=event.get("index") if event is not None else None)


def show(trace: dict[str, Any] | None = None, figure: dict[str, Any] | None = None) -> None:
    """Add to the verdict what the learner's code did as a picture: the timeline of its calls
    (grader.core.display.timeline) or a figure (grader.core.display.line_figure, bar_figure, table_figure). Call it
    from a test marked @figure (or from a check); the last trace shown wins, figures add up."""
    if _shown_to is None:
        raise RuntimeError("show() is for an exercise's checks, while the grading process runs them")
    _shown_to(trace, figure)


# Where show() hands a picture: the grading process's pytest plugin sets it for the run (grader/harness/plugin.py),
# so that this API never imports the harness.
_shown_to: Callable[[dict[str, Any] | None, dict[str, Any] | None], None] | None = None


def show_to(sink: Callable[[dict[str, Any] | None, dict[str, Any] | None], None]) -> None:
    global _shown_to
    _shown_to = sink


def explained_by(check_id: str, message: str, line: int | None = None) -> NoReturn:
    """Fail, saying that check `check_id`'s failure explains this one (e.g. scaler.step raised because
    backward ran on the raw loss). The result then reports this check "skipped" because of that one;
    if `check_id` passed after all, this check fails with `message`, which must be true on its own."""
    raise CheckFailed(message, line, explained_by=check_id)
