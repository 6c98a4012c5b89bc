"""The learner's end of the live channel (grader/harness/channel.py has the whole story and the grading
side's end): spies `emit` events and `amend` the latest one, a probe may `ask` the referee, and a process
the probe forks before the learner's code loads may `take_helper`.
"""
from __future__ import annotations

import io
import json
import socket
import threading
from typing import Any

import torch

from grader.core.wire import HEADER, recv_exactly


class LearnerChannel:
    """One end of a channel in a learner-side process; `ask` blocks until the grading side answers."""

    def __init__(self, fd: int) -> None:
        self._sock = socket.socket(fileno=fd)
        self._lock = threading.Lock()
        self._events = 0
        self.closed = False

    def _send(self, message: dict[str, Any]) -> None:
        try:
            payload, kind = json.dumps(message, allow_nan=True).encode(), b"J"
        except (TypeError, ValueError):
            buffer = io.BytesIO()
            torch.save(message, buffer)
            payload, kind = buffer.getvalue(), b"T"
        with self._lock:
            if self.closed:
                return
            try:
                self._sock.sendall(HEADER.pack(len(payload), kind[0]) + payload)
            except OSError:
                # The grading side refused the stream (and noted why): events past that point are not
                # sent, and the learner's code is not interrupted by a spy.
                self.closed = True

    def emit(self, event: dict[str, Any]) -> int:
        """Send one event; returns its index in the grading side's copy."""
        self._send({"op": "event", "event": event})
        self._events += 1
        return self._events - 1

    def is_latest(self, index: int) -> bool:
        return index == self._events - 1

    def amend(self, index: int, fields: dict[str, Any]) -> None:
        self._send({"op": "amend", "index": index, "fields": fields})

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self._send({"op": "ask", "request": request})
        with self._lock:
            if self.closed:
                raise ConnectionError("the grading side closed the channel")
            header = recv_exactly(self._sock, HEADER.size)
            size, _ = HEADER.unpack(header)
            answer: dict[str, Any] = json.loads(recv_exactly(self._sock, size))
            return answer

    def close(self) -> None:
        self.closed = True
        self._sock.close()


_learner: LearnerChannel | None = None
_helper_fd: int | None = None


def connect(fd: int | None, helper_fd: int | None = None) -> None:
    """Called once in the learner's process, before the probe's prepare()."""
    global _learner, _helper_fd
    _learner = LearnerChannel(fd) if fd is not None else None
    _helper_fd = helper_fd


def take_helper() -> LearnerChannel:
    """In a process the probe forked during prepare(), before any learner code ran: the helper channel's
    end, and the learner's channel closed (the helper reports on its own channel only)."""
    global _learner, _helper_fd
    if _helper_fd is None:
        raise RuntimeError("this run has no helper channel (Referee.helper_channel)")
    if _learner is not None:
        _learner.close()
        _learner = None
    helper, _helper_fd = LearnerChannel(_helper_fd), None
    return helper


def drop_helper() -> None:
    """Close the helper channel's end in this process: done after the probe's prepare(), so the learner's
    code never holds it (a helper forked by then keeps its own copy)."""
    global _helper_fd
    if _helper_fd is not None:
        import os

        os.close(_helper_fd)
        _helper_fd = None


def emit(event: dict[str, Any]) -> int | None:
    return _learner.emit(event) if _learner is not None else None


def amend(index: int | None, **fields: Any) -> None:
    """Add fields to the event `index`, which must be the last one sent (else nothing is sent: an event
    cannot change once another followed it)."""
    if _learner is not None and index is not None and _learner.is_latest(index):
        _learner.amend(index, fields)


def ask(request: dict[str, Any]) -> dict[str, Any]:
    if _learner is None:
        raise RuntimeError("no channel to the grading process")
    return _learner.ask(request)
