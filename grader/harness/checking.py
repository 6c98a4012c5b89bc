"""What check authors import in an exercise's `checks/test_*.py`.

    from grader.harness.checking import check, fail

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

import pytest

check = pytest.mark.check
figure = pytest.mark.figure  # a test that only draws (grader.checks.judging.show)


class CheckFailed(AssertionError):
    """A check's learner-facing verdict: what happened at run time, and where."""

    def __init__(self, message: str, line: int | None = None, hint: str | None = None,
                 explained_by: str | None = None, event: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.hint = hint  # None: the check's own hint from exercise.yaml
        self.explained_by = explained_by
        self.event = event  # the recorded event (its "index") this failure is about: the timeline marks it


def fail(message: str, line: int | None = None, hint: str | None = None, event: dict | None = None) -> None:
    """The check fails with `message`. `event`: the recorded event it is about (a dict of
    observed["events"]); its line is marked in the editor and its row in the verdict's timeline."""
    if event is not None and line is None:
        line = event.get("line")
    raise CheckFailed(message, line, hint, event=event.get("index") if event is not None else None)


def show(trace: dict | None = None, figure: dict | None = None) -> None:
    """Add to the verdict what the learner's code did as a picture: the timeline of its calls
    (grader.core.display.timeline) or a figure (grader.core.display.line_figure, bar_figure, table_figure). Call it
    from a test marked @figure (or from a check); the last trace shown wins, figures add up."""
    from grader.harness import plugin

    plugin.add_display(trace, figure)


def explained_by(check_id: str, message: str, line: int | None = None) -> None:
    """Fail, saying that check `check_id`'s failure explains this one (e.g. scaler.step raised because
    backward ran on the raw loss). The result then reports this check "skipped" because of that one;
    if `check_id` passed after all, this check fails with `message`, which must be true on its own."""
    raise CheckFailed(message, line, explained_by=check_id)
