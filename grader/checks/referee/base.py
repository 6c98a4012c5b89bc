"""The referee's base, for an exercise's `checks/referee.py` (grader.checks.referee.outside re-exports it): the
grading process, while the learner's code runs. What a referee is (its answers, its runs, what the checks get)
is here; how the grading process serves it on the channel is grader/harness/channel.py's, which reads and
writes the state below (the streamed events, what was refused)."""
from __future__ import annotations

import time
from typing import Any, Protocol

from sandbox.jail import PauseNotHeld

__all__ = ["Learner", "Referee", "ChannelError", "Stopwatch", "PauseNotHeld"]


class Learner(Protocol):
    """What a referee may do to the learner's processes while it answers. `pause` and `resume` raise
    `PauseNotHeld` when the learner's tasks did not all stop, or something but the grading process ran meanwhile."""

    def pause(self) -> None: ...
    def resume(self) -> None: ...


class Referee:
    """An exercise's grading-side answers (checks/referee.py subclasses this); keeps the event stream.

    `answer` runs in the grading process while the learner's process waits for it; `outside()` is what
    the checks receive afterwards as their `outside` fixture. `arrived` is when the message being
    answered had been received whole (its last byte), on this process's clock: it is set only once the
    message was checked, just before it is handled, and a header or part of a payload sent ahead sets
    nothing.

    Runs: the learner's code runs in the main run (`main_run` names it) and in each of `memory_runs`
    marked True, every one the probe's same `probe(api)` with `api.run` its name; runs marked False run
    `probe.measure(api, name)` without any learner code (the grading side's own reference processes).
    The kernel's peak memory of every run lands in `memory[name]`. `begin(name)` starts a run's copy of
    the stream (`events_of[name]`; `events` is the main run's)."""

    memory_runs: tuple[tuple[str, bool], ...] = ()
    main_run = "main"
    helper_channel = False  # a second channel for a process the probe forks before learner code loads

    def __init__(self, seed: int, device: str) -> None:
        self.seed, self.device = seed, device
        self.memory: dict[str, dict[str, Any]] = {}
        self.events_of: dict[str, list[dict[str, Any]]] = {}
        self.refused_in: dict[str, str] = {}  # run -> what the learner's side sent that was refused
        self.problems: list[str] = []  # for the instructor: what the stream held that was refused
        self.arrived = 0.0
        self.run = ""
        self.begin(self.main_run)

    def begin(self, run: str) -> None:
        self.run = run
        self.events_of[run] = []

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.events_of[self.main_run]

    @property
    def refused(self) -> str | None:
        """Why the main run's channel was closed on something the learner's side sent, or None."""
        return self.refused_in.get(self.main_run)

    def answer(self, request: dict[str, Any], learner: Learner) -> dict[str, Any]:
        raise ChannelError(f"this exercise answers no questions (asked {str(request)[:80]})")

    def answer_helper(self, request: dict[str, Any]) -> dict[str, Any]:
        """A question or report from the helper process (grading-side code in the sandbox)."""
        raise ChannelError(f"this exercise has no helper (it sent {str(request)[:80]})")

    def outside(self) -> dict[str, Any]:
        return {"memory": self.memory}


class ChannelError(Exception):
    """The learner's side sent something the grading side refuses; the channel is closed."""


class Stopwatch:
    """Wall time on the grading side's clock, which the learner's process cannot touch."""

    def __init__(self) -> None:
        self.started: float | None = None

    def start(self) -> None:
        self.started = time.perf_counter()

    def stop(self, at: float | None = None) -> float:
        """Seconds since start, until `at` (a perf_counter reading, e.g. `Referee.arrived`: when the message
        being answered was received whole) or now."""
        assert self.started is not None
        elapsed, self.started = (time.perf_counter() if at is None else at) - self.started, None
        return elapsed
