"""The live channel between the learner's process and the grading process, open while the code runs.

Two things travel on it (a socket pair made by isolation.run_confined):

* **Events**, learner to grader, as they happen: every spy call (`emit`) and every later detail
  added to one (`amend`). The grading side keeps its own copy, so a submission that rewrites the spies'
  lists afterwards (through `sys.modules` or `gc`) changes nothing the checks read. The learner's code
  can still write forged events to the socket itself: the threat model says so.
* **Questions**, learner to grader and back (`ask`): an exercise's `checks/referee.py` answers them in
  the grading process, where the learner cannot reach. fix-the-bottleneck's referee, for example, picks
  each timing round's data only when the round starts and times both sides on its own clock, with the
  learner's processes paused while it times the original step.

Framing: 4-byte length, 1-byte kind (J: JSON, T: torch.save for messages that hold tensors), payload.
Everything the grading side reads is bounded and checked like the final frame (frame.py).
"""
from __future__ import annotations

import io
import json
import socket
import struct
import threading
import time
from typing import Any, Protocol

import torch

MAX_MESSAGE_BYTES = 8 * 1024 * 1024  # one event (accumulate-amp's carry a small model's grads and weights)
MAX_STREAM_BYTES = 64 * 1024 * 1024  # all messages of one run together (as isolation.RESULT_CAP)
MAX_EVENTS = 50_000  # fix-underflow, the longest run, streams ~2,000
_HEADER = struct.Struct(">IB")


# --- the learner's side -------------------------------------------------------------------------

class LearnerChannel:
    """The learner process's end. One per process; `ask` blocks until the grading side answers."""

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
                self._sock.sendall(_HEADER.pack(len(payload), kind[0]) + payload)
            except OSError:
                # The grading side refused the stream (and noted why): events past that point are not
                # sent, and the learner's code is not interrupted by a spy.
                self.closed = True

    def emit(self, event: dict[str, Any]) -> int:
        """Send one event; returns its index in the grading side's copy."""
        self._send({"op": "event", "event": event})
        self._events += 1
        return self._events - 1

    def amend(self, index: int, fields: dict[str, Any]) -> None:
        self._send({"op": "amend", "index": index, "fields": fields})

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self._send({"op": "ask", "request": request})
        with self._lock:
            if self.closed:
                raise ConnectionError("the grading side closed the channel")
            header = _recv_exactly(self._sock, _HEADER.size)
            size, _ = _HEADER.unpack(header)
            return json.loads(_recv_exactly(self._sock, size))


_learner: LearnerChannel | None = None


def connect(fd: int | None) -> None:
    """Called once in the learner's process, before the probe's prepare()."""
    global _learner
    _learner = LearnerChannel(fd) if fd is not None else None


def emit(event: dict[str, Any]) -> int | None:
    return _learner.emit(event) if _learner is not None else None


def amend(index: int | None, **fields: Any) -> None:
    if _learner is not None and index is not None:
        _learner.amend(index, fields)


def ask(request: dict[str, Any]) -> dict[str, Any]:
    if _learner is None:
        raise RuntimeError("no channel to the grading process")
    return _learner.ask(request)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the other side closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# --- the grading side ---------------------------------------------------------------------------

class Learner(Protocol):
    """What a referee may do to the learner's processes while it answers."""

    def pause(self) -> None: ...
    def resume(self) -> None: ...


class Referee:
    """An exercise's grading-side answers (checks/referee.py subclasses this); keeps the event stream.

    `answer` runs in the grading process while the learner's process waits for it; `outside()` is what
    the checks receive afterwards as their `outside` fixture. `memory_runs` names dedicated processes
    the grading side starts after the main run, each running only the probe's `measure(api, name)`,
    with the learner's code loaded or not; their kernel-counted peaks land in `memory[name]`."""

    memory_runs: tuple[tuple[str, bool], ...] = ()

    def __init__(self, seed: int, device: str) -> None:
        self.seed, self.device = seed, device
        self.memory: dict[str, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.problems: list[str] = []  # for the instructor: what the stream held that was refused
        self.streamed = False

    def answer(self, request: dict[str, Any], learner: Learner) -> dict[str, Any]:
        raise ChannelError(f"this exercise answers no questions (asked {str(request)[:80]})")

    def outside(self) -> dict[str, Any]:
        return {"memory": self.memory}

    # The stream ----------------------------------------------------------------------------------

    def serve(self, sock: socket.socket, learner: Learner) -> None:
        """Read until the learner's process closes its end; answer questions on the way."""
        received = 0
        try:
            while True:
                header = _recv_or_end(sock, _HEADER.size)
                if header is None:
                    return
                size, kind = _HEADER.unpack(header)
                received += size
                if size > MAX_MESSAGE_BYTES or received > MAX_STREAM_BYTES:
                    raise ChannelError(f"a message of {size} bytes ({received} in all) is over the bounds")
                message = _decode(kind, _recv_exactly(sock, size))
                self._handle(message, sock, learner)
        except (ChannelError, ConnectionError, OSError) as exc:
            self.problems.append(f"the learner's channel was closed: {exc}")
        finally:
            sock.close()

    def _handle(self, message: Any, sock: socket.socket, learner: Learner) -> None:
        from grader.harness.frame import FrameError, check_value

        if not isinstance(message, dict):
            raise ChannelError("a message that is not a mapping")
        try:
            check_value(message)
        except FrameError as exc:
            raise ChannelError(str(exc)) from None
        op = message.get("op")
        if op == "event" and isinstance(message.get("event"), dict):
            self.streamed = True
            if len(self.events) >= MAX_EVENTS:
                raise ChannelError(f"more than {MAX_EVENTS} events")
            self.events.append(message["event"])
        elif op == "amend" and isinstance(message.get("fields"), dict):
            index = message.get("index")
            if not isinstance(index, int) or not 0 <= index < len(self.events):
                raise ChannelError(f"an amendment of event {index!r}, which was never sent")
            self.events[index].update(message["fields"])
        elif op == "ask" and isinstance(message.get("request"), dict):
            reply = json.dumps(self.answer(message["request"], learner)).encode()
            sock.sendall(_HEADER.pack(len(reply), ord("J")) + reply)
        else:
            raise ChannelError(f"an unknown message {str(message)[:80]}")


class ChannelError(Exception):
    """The learner's side sent something the grading side refuses; the channel is closed."""


def _recv_or_end(sock: socket.socket, size: int) -> bytes | None:
    first = sock.recv(size)
    if not first:
        return None
    return first + (_recv_exactly(sock, size - len(first)) if len(first) < size else b"")


def _decode(kind: int, payload: bytes) -> Any:
    try:
        if kind == ord("J"):
            return json.loads(payload)
        if kind == ord("T"):
            return torch.load(io.BytesIO(payload), weights_only=True)
    except Exception as exc:  # noqa: BLE001 - anything unreadable is the learner's doing
        raise ChannelError(f"an unreadable message ({type(exc).__name__})") from None
    raise ChannelError(f"a message of unknown kind {kind}")


def serve_in_background(referee: Referee, sock: socket.socket, learner: Learner) -> threading.Thread:
    thread = threading.Thread(target=referee.serve, args=(sock, learner), daemon=True, name="referee")
    thread.start()
    return thread


class Stopwatch:
    """Wall time on the grading side's clock, which the learner's process cannot touch."""

    def __init__(self) -> None:
        self.started: float | None = None

    def start(self) -> None:
        self.started = time.perf_counter()

    def stop(self) -> float:
        assert self.started is not None
        elapsed, self.started = time.perf_counter() - self.started, None
        return elapsed


__all__ = ["Learner", "LearnerChannel", "Referee", "ChannelError", "Stopwatch", "connect", "emit", "amend",
           "ask", "serve_in_background", "MAX_EVENTS", "MAX_MESSAGE_BYTES", "MAX_STREAM_BYTES"]
