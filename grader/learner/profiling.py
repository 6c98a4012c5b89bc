"""Spies on torch.profiler for the profiling lesson, and a fair step timer.

`install()` (from a probe's `prepare()`, before the submission is loaded) puts recording subclasses
behind `torch.profiler.profile` and `record_function`, so the probe learns whether a profiler session
ran, which regions the learner labelled inside it, and which labels were open when a given function
ran. `swap_in` runs the grader's copy of a function in the learner's place, inside the labels the
learner's own function opens (a `record_function` decorator or a `with` block in its body), and
`slow_forward` puts known slow work into a model's forward.
"""
from __future__ import annotations

import sys
import time
from types import FrameType
from typing import Any, Callable

import torch
import torch.autograd.profiler
import torch.profiler

from grader.learner.recorder import RECORDER, SUBMISSION_FILENAME

# Frames between a `@record_function(...)` decorated learner function and our __enter__.
_DECORATOR_FILES = ("contextlib.py", "_contextlib.py")


def _called_by_submission() -> bool:
    """Whether the learner's own code opened this region (torch.optim opens regions of its own). A
    decorated learner function may be called through this module's wrappers (swap_in)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and (frame.f_code.co_filename.endswith(_DECORATOR_FILES)
                                 or frame.f_code.co_filename == __file__):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename == SUBMISSION_FILENAME


def _make_profile(base: type) -> type:
    class profile(base):  # noqa: N801 - mirrors torch's own name
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._uses_schedule = kwargs.get("schedule") is not None

        # `with profile(...)` calls start() and stop(); the documented non-context-manager form
        # (`prof.start(); ...; prof.stop()`) calls them directly: either way a session is seen.
        def start(self) -> None:
            RECORDER.add("profile.enter", activities=sorted(str(a).split(".")[-1] for a in (self.activities or [])),
                         schedule=self._uses_schedule)
            RECORDER.active_profilers += 1
            super().start()

        def stop(self) -> None:
            try:
                super().stop()
            finally:
                RECORDER.active_profilers -= 1
                RECORDER.add("profile.exit")

        def key_averages(self, *args: Any, **kwargs: Any) -> Any:
            averages = super().key_averages(*args, **kwargs)
            RECORDER.add("profile.key_averages", rows=_label_rows(averages))
            return averages

        def events(self, *args: Any, **kwargs: Any) -> Any:
            RECORDER.add("profile.events")
            return super().events(*args, **kwargs)

    return profile


def _label_rows(averages: Any) -> list[list[Any]]:
    """The learner's own regions in a key_averages() table, slowest first: [label, total CPU ms, calls]
    (what the verdict's table shows; display only, nothing is judged on it)."""
    labels = {event["label"] for event in RECORDER.events if event["event"] == "label.enter"}
    try:
        rows: list[list[Any]] = [[str(a.key), round(float(a.cpu_time_total) / 1000, 3), int(a.count)] for a in averages
                if str(a.key) in labels]
    except Exception:  # noqa: BLE001 - an unusual table (grouped by shape, ...): show nothing rather than fail
        return []
    return sorted(rows, key=lambda row: -row[1])[:12]


def _make_record_function(base: type) -> type:
    class record_function(base):  # noqa: N801 - mirrors torch's own name
        def __enter__(self) -> Any:
            # Only the learner's labels: the profiler's "ProfilerStep#N" regions (opened in one step(),
            # closed in the next) and torch.optim's "Optimizer.step#..." regions are not theirs.
            if _called_by_submission():
                RECORDER.add("label.enter", label=str(self.name), depth=len(RECORDER.open_labels))
                RECORDER.open_labels.append((id(self), str(self.name)))
                if RECORDER.swap is not None and RECORDER.swap.label is None:
                    RECORDER.swap.label = id(self)  # the first region the learner's function opens
            return super().__enter__()

        def __exit__(self, *exc: Any) -> Any:
            swap = RECORDER.swap
            if swap is not None and swap.label == id(self) and not swap.done and exc[0] is None:
                swap.run()  # the grader's copy, inside the learner's own region
            for i in range(len(RECORDER.open_labels) - 1, -1, -1):
                if RECORDER.open_labels[i][0] == id(self):
                    del RECORDER.open_labels[i]
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
            RECORDER.add("call", name=name, labels=[label for _, label in RECORDER.open_labels],
                    seconds=time.perf_counter() - started)

    return watched


class _Swap:
    """One call of a swapped-in function: the grader's copy runs once, in the first region the learner's
    function opens, or where the call was made if it opens none."""

    def __init__(self, original: Callable[..., Any], name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.call = watch_calls(original, name)
        self.args, self.kwargs = args, kwargs
        self.label: int | None = None
        self.done = False
        self.result: Any = None

    def run(self) -> None:
        self.done = True
        self.result = self.call(*self.args, **self.kwargs)


def swap_in(learner_function: Callable[..., Any], original: Callable[..., Any], name: str) -> Callable[..., Any]:
    """Call `learner_function`, for its labels only, and return what `original` returns.

    The grader profiles the original step with its own copy of a function (`original`), but the learner
    may have put the label inside their version of it (`@record_function("preprocess")`, or a `with`
    block in its body): replacing the function would take the label away with it. So the learner's
    function runs, and `original` runs inside the first region it opens (or after it, where the call
    was made, if it opens none). The learner's function gets only the first rows of each tensor
    argument and its result is discarded: it is there for its labels, and a slow version of it would
    only add operators for the profiler to record and parse.
    """

    def swapped(*args: Any, **kwargs: Any) -> Any:
        swap, outer = _Swap(original, name, args, kwargs), RECORDER.swap
        RECORDER.swap = swap
        try:
            learner_function(*(_first_rows(a) for a in args), **kwargs)
        finally:
            RECORDER.swap = outer
        if not swap.done:
            swap.run()
        return swap.result

    return swapped


def _first_rows(value: Any, rows: int = 2) -> Any:
    return value[:rows] if isinstance(value, torch.Tensor) and value.dim() > 0 else value


def slow_forward(model: torch.nn.Module, work: Callable[[torch.Tensor], Any], name: str) -> None:
    """Make `model`'s forward slow: `work` runs on its input first (under no_grad, result discarded),
    logged like watch_calls with the labels open around it."""
    forward, watched = model.forward, watch_calls(work, name)

    def slowed(x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        with torch.no_grad():
            watched(x.detach())
        return forward(x, *args, **kwargs)

    model.forward = slowed
