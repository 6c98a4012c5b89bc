"""What check authors import in an exercise's `checks/test_*.py`.

    from grader.harness.checking import check, fail

    @check("scaled-backward")
    def test_backward_on_scaled_loss(observed):
        for event in observed["events"]:
            if event["event"] == "backward" and event["on"] != "scaled":
                fail("backward ran on the raw loss", line=event["line"])

A check id may be shared by several tests; the check passes when all of them pass, and its message is
the first failure's. Plain `assert` works too; `fail` adds the submission line to mark in the editor.
"""
from __future__ import annotations

import pytest

check = pytest.mark.check


class CheckFailed(AssertionError):
    """A check's learner-facing verdict: what happened at run time, and where."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


def fail(message: str, line: int | None = None) -> None:
    raise CheckFailed(message, line)
