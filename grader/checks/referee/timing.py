"""Timing rounds on the grading process's clock, alternating with the learner's: the machinery of a `faster`
check (profiling/fix-the-bottleneck's step, profiling/feed-the-model's epoch). Its three parts:

    TimedRounds(seeds, device, bar, original, received)   in checks/referee.py (the grading process):
                                        answers the probe's `start` and `finish` questions and times both
                                        sides; `outside()` is what the checks read
    grader.checks.learner.probes.timed_rounds(run_round)           in checks/probe.py (the learner's process):
                                        asks for each round, runs it, reports, until told the verdict is known
    grader.checks.grading.verdicts.check_faster(outside, ...)      in checks/test_*.py: the median of the per-round
                                        ratios against the bar (re-exported by grader.checks.grading.judging)

Each round, the learner's process asks to start; the referee picks the round's data (a seed it drew from
`secrets`, which the learner learns only then, so nothing can be computed ahead), times the grading side's
own run of the original with the learner's processes paused (so they cannot slow it), and times the
learner's run from its start answer until its finish question has been received whole (`arrived`, which
the channel sets from the question's last byte, once it is checked: a header or part of the question sent
ahead stops nothing). The finish question carries what the learner's run computed (its losses, the weights
after it), which the checks compare with the original's on the same data: the timed work is the checked
work. Both sides pay for framing their report. Which side goes first alternates, so a burst of load hits
both alike. Round 0 is a warm-up for both and is not counted.

A round is timed only while the learner's processes are really stopped (sandbox.jail.LearnerHandle: every task
stopped before the clock starts, and no CPU used meanwhile but the grading process's). When a pause does not
hold (PauseNotHeld) the round is void, though when only the CPU accounting showed something else running, the
original is first timed again, PAUSE_ATTEMPTS times in all. At a void round the rounds stop, the learner's
process is told so, and `outside()` carries `void`, a sentence for the learner saying what was seen, with
`decided` False: a void round never leaves a verdict that can pass (check_faster fails on too few rounds;
a check that reads `void` first, as fix-the-bottleneck's does, says why).

The rounds stop as soon as the verdict is known: the median of `rounds` rounds against the bar is fixed once
`rounds // 2 + 1` of them fall on one side (`decided`), so a clear case takes about half the rounds. The
learner's process is told so in the finish answer; knowing which round is the last gains it nothing, since
every round it is told to run is timed and checked, and a process that stops asking before the decision
fails the check (`check_faster`: too few rounds to decide).
"""
from __future__ import annotations

import contextlib
import io
import time
from typing import Any, Callable

import torch

from grader.checks.referee.base import ChannelError, Learner, PauseNotHeld, Stopwatch

__all__ = ["TimedRounds", "decided", "tensors_by_name"]

PAUSE_ATTEMPTS = 3  # tries at timing a round's original before the round is void


def decided(ratios: list[float], bar: float, rounds: int) -> bool:
    """Whether the median of `rounds` rounds is already known from these: `rounds // 2 + 1` on one side of
    the bar (or all of them timed)."""
    deciding = rounds // 2 + 1
    above = sum(r >= bar for r in ratios)
    return len(ratios) >= rounds or above >= deciding or len(ratios) - above >= deciding


class TimedRounds:
    """The referee's side of the rounds. `seeds`: one per round, round 0 the warm-up (drawn by the referee
    from `secrets`, never from the run's seed); `bar`: the speed-up the check demands (the rounds stop once
    its verdict is known); `original(seed)`: the grading side's own run of the original on that round's data,
    returning its report (a dict: what the learner's finish question carries, from the original); timed here,
    the learner's processes paused; `received(request)`: the learner's finish question read into the same
    fields, each one checked (anything malformed left out or None, for the checks to say so).

    `answer(request, learner, arrived)` answers `{"op": "start" | "finish", "index": i, ...}`, in turn, and
    raises ChannelError for anything else; `outside()` gives the timed rounds, each with `original_s`,
    `learner_s` and every report field prefixed `original_` and `learner_`."""

    def __init__(self, seeds: list[int], device: str, bar: float, original: Callable[[int], dict[str, Any]],
                 received: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.seeds, self.device, self.bar = list(seeds), device, bar
        self.rounds = len(self.seeds) - 1
        self._original, self._received = original, received
        self.original_s: dict[int, float] = {}
        self.learner_s: dict[int, float] = {}
        self.original: dict[int, dict[str, Any]] = {}
        self.learner: dict[int, dict[str, Any]] = {}
        self.clock = Stopwatch()
        self.open: int | None = None
        self.void: str | None = None  # why a round could not be timed (then no more are)

    def _synchronize(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def _time_original(self, index: int, learner: Learner) -> None:
        why = ""
        for _ in range(PAUSE_ATTEMPTS):
            try:
                learner.pause()  # every learner task stopped once it returns
            except PauseNotHeld as exc:  # a task that did not stop in the pause's wait would not on a retry
                why = str(exc)
                break
            try:
                timed = self._run_original(index)
            except BaseException:
                with contextlib.suppress(PauseNotHeld):
                    learner.resume()
                raise
            try:
                learner.resume()  # PauseNotHeld when anything but this process used CPU meanwhile
            except PauseNotHeld as exc:
                why = str(exc)
                continue
            self.original_s[index], self.original[index] = timed
            return
        self.void = (f"The grader could not time round {index} with nothing but its own original running: {why}. "
                     "A time taken while your code still runs measures nothing, so this check cannot pass: processes "
                     "your code starts must stop when the grader stops them, and none may stay inside one long "
                     "system call.")

    def _run_original(self, index: int) -> tuple[float, dict[str, Any]]:
        self._synchronize()
        started = time.perf_counter()
        done = self._original(self.seeds[index])
        self._synchronize()
        torch.save(done, io.BytesIO())  # as the learner's finish question is framed: both sides pay for it
        return time.perf_counter() - started, done

    def answer(self, request: dict[str, Any], learner: Learner, arrived: float | None) -> dict[str, Any]:
        op, index = request.get("op"), request.get("index")
        expected = len(self.learner_s) if self.open is None else self.open
        if not isinstance(index, int) or index != expected or index > self.rounds or (
                op == "start" and self.finished):
            raise ChannelError(f"timing round {index!r} asked out of turn (expected {expected})")
        if op == "start" and self.open is None:
            if index % 2 == 0:  # alternate which side goes first: a burst of load hits both alike
                self._time_original(index, learner)
            self.open = index
            self.clock.start()
            return {"seed": self.seeds[index]}
        if op == "finish" and self.open == index:
            self.learner_s[index] = self.clock.stop(at=arrived)  # its last byte received, not its reading
            self.learner[index] = self._received(request)
            self.open = None
            if index % 2 == 1:
                self._time_original(index, learner)
            return {"done": self.finished}
        raise ChannelError(f"timing: {op!r} for round {index} out of turn")

    def timed(self) -> list[int]:
        """The rounds timed on both sides, warm-up left out."""
        return [i for i in range(1, self.rounds + 1) if i in self.learner_s and i in self.original_s]

    @property
    def finished(self) -> bool:
        """No more rounds: the verdict is known, or a round was void."""
        return self.decided or self.void is not None

    @property
    def decided(self) -> bool:
        if self.void is not None:
            return False
        ratios = [self.original_s[i] / self.learner_s[i] for i in self.timed()]
        return decided(ratios, self.bar, self.rounds)

    def outside(self) -> dict[str, Any]:
        rounds = []
        for i in self.timed():
            row: dict[str, Any] = {"index": i, "original_s": self.original_s[i], "learner_s": self.learner_s[i]}
            row.update({f"original_{key}": value for key, value in self.original[i].items()})
            row.update({f"learner_{key}": value for key, value in self.learner[i].items()})
            rounds.append(row)
        return {"rounds": rounds, "decided": self.decided, "rounds_most": self.rounds,
                "deciding": self.rounds // 2 + 1, "void": self.void}


def tensors_by_name(value: Any) -> dict[str, torch.Tensor]:
    """Weights as a finish question sent them: float32 tensors by parameter name, anything else left out
    (the check then says which parameter is missing)."""
    if not isinstance(value, dict):
        return {}
    return {name: tensor.detach().float() for name, tensor in value.items()
            if isinstance(name, str) and isinstance(tensor, torch.Tensor)}
