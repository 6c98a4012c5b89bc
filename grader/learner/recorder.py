"""The one event log of a learner process: every spy's event (AMP, accumulation, profiling, the probe's
own marks), numbered, with the submission line that made it, and streamed to the grading process as it
happens (channel.py). The checks read the grading side's copy, never this process's list.

Besides the log, the state the spies share while the learner's code runs: the watched parameters, the
losses and scaled losses (to tell what backward ran on), the scalers, whether a scaler step or a
backward is in progress, and for the profiler spies the regions open and the profiled run in progress.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

from grader.core.events import EVENTS
from grader.learner import channel

if TYPE_CHECKING:
    from types import FrameType

    import torch

SUBMISSION_FILENAME = "submission.py"


def submission_line() -> int | None:
    """The innermost line of the learner's file on the current call stack."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == SUBMISSION_FILENAME:
            return frame.f_lineno
        frame = frame.f_back
    return None


class Recorder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.recording = True  # a probe stops recording for what is not the learner's (a replay)
        self._streamed: dict[int, int | None] = {}  # our index -> the grading side's (channel.emit)
        # AMP spies (amp.py, accumulation.py)
        self.params: list[torch.Tensor] = []
        self.scaled: list[torch.Tensor] = []
        self.losses: list[torch.Tensor] = []
        # Each loss's value when loss_fn returned it: `loss /= k` (timm's style) later changes the tensor
        # itself, so its value at backward time would hide the division.
        self.loss_values: list[float | None] = []
        self.scalers: list[torch.amp.GradScaler] = []
        self.in_scaler_step = 0
        self.in_backward = 0
        # More fields for each backward event, computed from its target before it runs (accumulation.py
        # adds the target's value, the last loss and the scale): an event is complete when it is streamed.
        self.backward_details: Callable[[Any], dict[str, Any]] | None = None
        # (line, call, dtype) of the learner's last cast of a model's weights to 16 bits (amp.py): PyTorch's
        # "Attempting to unscale FP16 gradients" is raised later, at scaler.step, and names neither.
        self.weights_cast: tuple[int, str, str | None] | None = None
        # Profiler spies (profiling.py)
        self.active_profilers = 0
        self.profiled_run: int | None = None  # which of the probe's profiled runs events belong to
        self.open_labels: list[tuple[int, str]] = []  # (id of the record_function, its label)
        self.swap: Any = None  # profiling's swap_in call in progress

    def add(self, event: str, **data: Any) -> dict[str, Any]:
        """Record one call the learner's code made (kind `event`, a key of grader.core.events.EVENTS)."""
        data.update(event=event, line=submission_line())
        return self._record(data)

    def _record(self, data: dict[str, Any]) -> dict[str, Any]:
        data["index"] = len(self.events)
        if EVENTS[data["event"]].profiler:
            data.update(profiling=self.active_profilers > 0, run=self.profiled_run)
        if self.recording:
            self.events.append(data)
            self._streamed[data["index"]] = channel.emit(data)
        return data

    def amend(self, event: dict[str, Any], **fields: Any) -> None:
        """Details known only when the call returns (an output's dtype): here, and in the grading side's copy
        while the event is still the latest streamed (grader.core.events.AMENDABLE)."""
        event.update(fields)
        channel.amend(self._streamed.get(event["index"]), **fields)

    def mark(self, label: str, **data: Any) -> None:
        """A probe's own marker (e.g. the start of the learner's n-th call)."""
        self._record({**data, "event": "mark", "label": label, "line": None})

    def grads_clear(self) -> bool:
        return all(p.grad is None or not bool(p.grad.detach().ne(0).any()) for p in self.params)

    def last_loss_value(self) -> float | None:
        return self.loss_values[-1] if self.loss_values else None


RECORDER = Recorder()
