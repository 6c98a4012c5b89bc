"""How a confined run's end becomes a verdict (grader/harness/interpret.py)."""
from __future__ import annotations

import io

import torch

from grader.core.protocol import Status
from grader.harness.interpret import interpret
from sandbox.jail import Limits, Outcome


def ended(**how: object) -> Outcome:
    return Outcome(**{"payload": None, "exit_code": None, "signal": 9, "timed_out": False, "output": "",
                      "output_truncated": False, **how})


def test_a_run_stopped_at_its_deadline_after_an_oom_kill_says_both() -> None:
    """A cgroup at its memory limit can reclaim past the deadline (seen in CI): the learner hears of the memory
    too, not only of the time, for both are what the kernel recorded."""
    limits = Limits(time_s=20, memory_mb=1024)
    verdict, observations = interpret(ended(timed_out=True, out_of_memory=True), limits)
    assert observations is None and verdict.status is Status.TIMEOUT
    assert verdict.error.kind == "memory"
    assert "ran out of memory" in verdict.error.message and "1024 MB" in verdict.error.message
    assert "time limit of 20 s" in verdict.error.message


def test_a_plain_timeout_says_time_only() -> None:
    verdict, _ = interpret(ended(timed_out=True), Limits(time_s=20))
    assert verdict.status is Status.TIMEOUT and verdict.error.kind == "timeout"
    assert "memory" not in verdict.error.message


def test_a_run_stopped_at_its_deadline_at_its_memory_limit_says_both() -> None:
    """No kill recorded, but the cgroup's use reached its limit (seen in CI: three forks of 1.2 GB under 2048 MB
    reclaimed past the 20 s deadline): the message says the memory limit was reached, not that a process was
    killed, since no kill was recorded."""
    verdict, _ = interpret(ended(timed_out=True, memory_limit_reached=True), Limits(time_s=20, memory_mb=2048))
    assert verdict.status is Status.TIMEOUT and verdict.error.kind == "memory"
    assert "reached its memory limit" in verdict.error.message and "2048 MB" in verdict.error.message
    assert "killed" not in verdict.error.message and "time limit of 20 s" in verdict.error.message


def test_an_error_line_the_learners_process_sent_as_a_bool_or_text_marks_none() -> None:
    """The frame is the learner's process's: an error's line of True (a JSON `true`, no integer) or "7" made a
    raw verdict the host refused, an infra-error (issue 48, finding 4)."""
    for line in (True, "7", 0, 10**9):
        payload = io.BytesIO()
        torch.save({"ok": False, "stage": "run", "error": {"kind": "exception", "message": "boom", "line": line}},
                   payload)
        verdict, _ = interpret(ended(signal=None, exit_code=0, payload=payload.getvalue()), Limits(time_s=20))
        assert verdict.status is Status.ERROR and verdict.error.line is None, line
