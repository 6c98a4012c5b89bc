"""The live channel between the learner's process and the grading process, open while the code runs.

Two things travel on it (a socket pair made by the grading process for each run; the learner's end,
grader/learner/channel.py, is the only part the learner's process imports):

* **Events**, learner to grader, as they happen: every spy call (`emit`) and the one detail a spy adds
  when the call it recorded returns (`amend`). The grading side keeps its own copy, numbered in the
  order it arrived, so a submission that rewrites the spies' lists afterwards (through `sys.modules` or
  `gc`) changes nothing the checks read. The copy is append-only: an amendment may only add a field
  its kind lists in `grader.core.events.AMENDABLE` to the most recent event, never change one. The
  learner's code can still write forged events to the socket itself: the threat model says so.
* **Questions**, learner to grader and back (`ask`): an exercise's `checks/referee.py` answers them in
  the grading process, where the learner cannot reach. fix-the-bottleneck's referee, for example, picks
  each timing round's data only when the round starts and times both sides on its own clock, with the
  learner's processes paused while it times the original step.

A run may also have a **helper channel**: a second socket pair whose learner-side end only a process
the probe forks before the learner's code is loaded keeps (`take_helper`; ddp-accumulate's other rank).
What arrives on it is grading-side code's report (`Referee.answer_helper`).

Framing: 4-byte length, 1-byte kind (J: JSON, T: torch.save for messages that hold tensors), payload.
Everything the grading side reads is bounded and checked like the final frame (frame.py) before it is
used, and anything it refuses closes the channel and becomes the learner's error (`Referee.refused`):
the learner's process sent it. A referee never dies on what it is sent. What a message may cost the
grading process is bounded before it is decoded: its bytes (MAX_MESSAGE_BYTES, MAX_STREAM_BYTES) and the
items its bytes can make (frame.json_items, frame.check_archive: at most MAX_MESSAGE_ITEMS a message,
MAX_STREAM_ITEMS a run), so a message that would expand once decoded (`[]` is 3 bytes on the wire, 64
in memory) is refused from its bytes.

A message is answered, and is on the grading side's clock (`Referee.arrived`), only once all of it was
received and checked: nothing the learner's side sends ahead of its last byte (a header, most of a
payload) ends a timed interval early. No referee can read a time for a message any earlier.
"""
from __future__ import annotations

import json
import socket
import threading
import time
import traceback
from typing import Any, Protocol

from grader.core.wire import (
    HEADER,
    MAX_EVENTS,
    MAX_MESSAGE_BYTES,
    MAX_MESSAGE_ITEMS,
    MAX_STREAM_BYTES,
    MAX_STREAM_ITEMS,
    recv_exactly,
)
from sandbox.jail import PauseNotHeld  # noqa: F401 - what Learner.pause/resume raise, for the referees' side


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

    # The stream ----------------------------------------------------------------------------------

    def serve(self, sock: socket.socket, learner: Learner, helper: bool = False) -> None:
        """Read until the learner's process closes its end; answer questions on the way. Whatever the
        learner's side sends, this returns (a referee thread never dies on it)."""
        received, items, run = 0, 0, self.run
        try:
            while True:
                header = _recv_or_end(sock, HEADER.size)
                if header is None:
                    return
                size, kind = HEADER.unpack(header)
                received += size
                if size > MAX_MESSAGE_BYTES or received > MAX_STREAM_BYTES:
                    raise ChannelError(f"a message of {size} bytes ({received} in all) is over the bounds")
                payload = recv_exactly(sock, size)
                arrived = time.perf_counter()  # its last byte is here: the learner's side is done with it
                message, counted = _decode(kind, payload)
                items += counted
                if items > MAX_STREAM_ITEMS:
                    raise ChannelError(f"more than {MAX_STREAM_ITEMS} items in all (containers, keys and values "
                                       "of the run's messages)")
                self._handle(message, sock, learner, run, helper, arrived)
        except ChannelError as exc:
            self._refuse(run, str(exc))
        except (ConnectionError, OSError) as exc:  # cut off mid-message: the run's end says why
            self.problems.append(f"the learner's channel was closed: {exc}")
        except Exception as exc:  # noqa: BLE001 - a message this side could not use is still the sender's
            self.problems.append(f"the referee failed on a message: {traceback.format_exc(limit=-3)[-1500:]}")
            self._refuse(run, f"a message the grader could not use ({type(exc).__name__})")
        finally:
            sock.close()

    def _refuse(self, run: str, why: str) -> None:
        self.refused_in.setdefault(run, why)
        self.problems.append(f"the learner's channel was closed: {why}")

    def _handle(self, message: Any, sock: socket.socket, learner: Learner, run: str, helper: bool,
                arrived: float) -> None:
        from grader.harness.frame import FrameError, check_value

        if not isinstance(message, dict):
            raise ChannelError("a message that is not a mapping")
        try:
            check_value(message)
        except FrameError as exc:
            raise ChannelError(str(exc)) from None
        self.arrived = arrived  # the whole message, received and checked
        op = message.get("op")
        if op == "ask" and isinstance(message.get("request"), dict):
            try:
                reply = self.answer_helper(message["request"]) if helper else self.answer(message["request"], learner)
            except ChannelError:
                raise
            except Exception as exc:  # noqa: BLE001 - a question the referee could not answer is refused
                self.problems.append(f"the referee could not answer {str(message['request'])[:200]}: "
                                     f"{traceback.format_exc(limit=-3)[-1500:]}")
                raise ChannelError(f"a question the grader could not answer ({type(exc).__name__})") from None
            payload = json.dumps(reply).encode()
            sock.sendall(HEADER.pack(len(payload), ord("J")) + payload)
        elif helper:
            raise ChannelError(f"a helper sent {str(op)[:40]!r}; it may only ask")
        elif op == "event":
            self._append(run, message.get("event"))
        elif op == "amend":
            self._amend(run, message.get("index"), message.get("fields"))
        else:
            raise ChannelError(f"an unknown message {str(message)[:80]}")

    def _append(self, run: str, event: Any) -> None:
        from grader.core.events import MalformedEvent, check_event

        events = self.events_of[run]
        if len(events) >= MAX_EVENTS:
            raise ChannelError(f"more than {MAX_EVENTS} events (calls the grader watches)")
        try:
            check_event(event)
        except MalformedEvent as exc:
            raise ChannelError(str(exc)) from None
        events.append({**event, "index": len(events)})  # numbered here, in the order it arrived

    def _amend(self, run: str, index: Any, fields: Any) -> None:
        from grader.core.events import AMENDABLE, MalformedEvent, check_event

        events = self.events_of[run]
        if not isinstance(index, int) or not 0 <= index < len(events) or not isinstance(fields, dict):
            raise ChannelError(f"an amendment of event {index!r}, which was never sent")
        event = events[index]
        allowed = AMENDABLE.get(event["event"], frozenset())
        for name in fields:
            if index != len(events) - 1:
                raise ChannelError(f"an amendment of event {index} ('{event['event']}') after later events: "
                                   "what was recorded does not change")
            if name not in allowed:
                raise ChannelError(f"an amendment of the '{str(name)[:40]}' of event {index} ('{event['event']}'), "
                                   "which no spy adds after the call")
            if name in event:
                raise ChannelError(f"an amendment of event {index}'s '{name}', already recorded")
        try:
            check_event({**event, **fields})
        except MalformedEvent as exc:
            raise ChannelError(f"an amendment making {exc}") from None
        event.update(fields)


class ChannelError(Exception):
    """The learner's side sent something the grading side refuses; the channel is closed."""


def _recv_or_end(sock: socket.socket, size: int) -> bytes | None:
    first = sock.recv(size)
    if not first:
        return None
    return first + (recv_exactly(sock, size - len(first)) if len(first) < size else b"")


def _refuse_big_int(digits: str) -> int:
    """json's int parser, bounded: an int no float can hold is refused here, before any referee sees it."""
    from grader.harness.frame import LARGEST_INT

    value = int(digits)
    if not -LARGEST_INT < value < LARGEST_INT:
        raise ChannelError(f"a number too large for the grader ({len(digits)} digits)")
    return value


def _decode(kind: int, payload: bytes) -> tuple[Any, int]:
    """(the message, an upper bound on its items), counted from the bytes before anything is decoded."""
    from grader.harness.frame import FrameError, check_archive, json_items, load_checked

    if kind == ord("J"):
        try:
            items = json_items(payload, MAX_MESSAGE_ITEMS)
        except FrameError as exc:
            raise ChannelError(str(exc)) from None
        try:
            return json.loads(payload, parse_int=_refuse_big_int), items
        except ChannelError:
            raise
        except Exception as exc:  # noqa: BLE001 - anything unreadable is the learner's doing
            raise ChannelError(f"an unreadable message ({type(exc).__name__})") from None
    if kind == ord("T"):
        try:
            items = check_archive(payload, MAX_MESSAGE_ITEMS)
            return load_checked(payload), items
        except FrameError as exc:
            raise ChannelError(str(exc)) from None
    raise ChannelError(f"a message of unknown kind {kind}")


def serve_in_background(referee: Referee, sock: socket.socket, learner: Learner,
                        helper: bool = False) -> threading.Thread:
    thread = threading.Thread(target=referee.serve, args=(sock, learner, helper), daemon=True,
                              name="referee-helper" if helper else "referee")
    thread.start()
    return thread


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


__all__ = ["Learner", "Referee", "ChannelError", "Stopwatch", "serve_in_background", "MAX_EVENTS",
           "MAX_MESSAGE_BYTES", "MAX_STREAM_BYTES", "MAX_MESSAGE_ITEMS", "MAX_STREAM_ITEMS"]
