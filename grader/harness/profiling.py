"""Spies on torch.profiler for the profiling lesson, and a fair step timer.

`install()` (from a probe's `prepare()`, before the submission is loaded) puts recording subclasses
behind `torch.profiler.profile` and `record_function`, so the probe learns whether a profiler session
ran, which regions the learner labelled inside it, and which labels were open when a given function
ran. `speedup` compares the grading side's timings (fix-the-bottleneck's checks/referee.py) round by
round, so a noisy shared machine slows both sides alike.
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable

import torch
import torch.autograd.profiler
import torch.profiler

from grader.harness import channel
from grader.harness.amp import SUBMISSION_FILENAME, submission_line

# Frames between a `@record_function(...)` decorated learner function and our __enter__.
_DECORATOR_FILES = ("contextlib.py", "_contextlib.py")


def _called_by_submission() -> bool:
    """Whether the learner's own code opened this region (torch.optim opens regions of its own)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.endswith(_DECORATOR_FILES):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename == SUBMISSION_FILENAME


class ProfilerLog:
    """What the learner's profiling did, as plain data for the checks."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.open_labels: list[tuple[int, str]] = []  # (id of the record_function, its label)
        self.active_profilers = 0
        self.recording = True

    def add(self, event: str, **data: Any) -> None:
        if self.recording:
            data.update(event=event, line=submission_line(), profiling=self.active_profilers > 0)
            self.events.append(data)
            channel.emit(data)  # the grading side's copy is the one its checks read


LOG = ProfilerLog()


def _make_profile(base: type) -> type:
    class profile(base):  # noqa: N801 - mirrors torch's own name
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._uses_schedule = kwargs.get("schedule") is not None

        def __enter__(self):
            LOG.add("profile.enter", activities=sorted(str(a).split(".")[-1] for a in (self.activities or [])),
                    schedule=self._uses_schedule)
            LOG.active_profilers += 1
            return super().__enter__()

        def __exit__(self, *exc: Any):
            try:
                return super().__exit__(*exc)
            finally:
                LOG.active_profilers -= 1
                LOG.add("profile.exit")

        def key_averages(self, *args: Any, **kwargs: Any):
            LOG.add("profile.key_averages")
            return super().key_averages(*args, **kwargs)

    return profile


def _make_record_function(base: type) -> type:
    class record_function(base):  # noqa: N801 - mirrors torch's own name
        def __enter__(self):
            # Only the learner's labels: the profiler's "ProfilerStep#N" regions (opened in one step(),
            # closed in the next) and torch.optim's "Optimizer.step#..." regions are not theirs.
            if _called_by_submission():
                LOG.add("label.enter", label=str(self.name), depth=len(LOG.open_labels))
                LOG.open_labels.append((id(self), str(self.name)))
            return super().__enter__()

        def __exit__(self, *exc: Any):
            for i in range(len(LOG.open_labels) - 1, -1, -1):
                if LOG.open_labels[i][0] == id(self):
                    del LOG.open_labels[i]
                    break
            return super().__exit__(*exc)

    return record_function


def install() -> None:
    """Patch torch.profiler in this (learner) process."""
    profile = _make_profile(torch.profiler.profile)
    record_function = _make_record_function(torch.autograd.profiler.record_function)
    torch.profiler.profile = profile
    torch.profiler.record_function = record_function
    torch.autograd.profiler.record_function = record_function


def watch_calls(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    """Wrap `function` to log, per call, the labels open around it and the seconds it took."""

    def watched(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            LOG.add("call", name=name, labels=[label for _, label in LOG.open_labels],
                    seconds=time.perf_counter() - started)

    return watched


def speedup(slow: list[float], fast: list[float]) -> float:
    """The median over rounds of slow/fast, each round's pair timed back to back.

    Pairing matters on a shared machine: a burst of load slows both halves of a round alike, while a
    ratio of separate medians can pair a quiet moment with a busy one (measured: an identical step
    showed 0.69x by medians, 1.00x paired).
    """
    return statistics.median(s / f for s, f in zip(slow, fast))
