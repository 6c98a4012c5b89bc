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
from typing import Any

from grader.checks.referee.base import ChannelError, Learner, Referee, Stopwatch
from grader.core.wire import (
    HEADER,
    MAX_EVENTS,
    MAX_MESSAGE_BYTES,
    MAX_MESSAGE_ITEMS,
    MAX_STREAM_BYTES,
    MAX_STREAM_ITEMS,
    recv_exactly,
)

# The stream: the grading process serving an exercise's referee (grader/checks/referee/base.py) -------------

def serve(referee: Referee, sock: socket.socket, learner: Learner, helper: bool = False) -> None:
    """Read until the learner's process closes its end; answer questions on the way. Whatever the
    learner's side sends, this returns (a referee thread never dies on it)."""
    received, items, run = 0, 0, referee.run
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
            _handle(referee, message, sock, learner, run, helper, arrived)
    except ChannelError as exc:
        _refuse(referee, run, str(exc))
    except (ConnectionError, OSError) as exc:  # cut off mid-message: the run's end says why
        referee.problems.append(f"the learner's channel was closed: {exc}")
    except Exception as exc:  # noqa: BLE001 - a message this side could not use is still the sender's
        referee.problems.append(f"the referee failed on a message: {traceback.format_exc(limit=-3)[-1500:]}")
        _refuse(referee, run, f"a message the grader could not use ({type(exc).__name__})")
    finally:
        sock.close()


def _refuse(referee: Referee, run: str, why: str) -> None:
    referee.refused_in.setdefault(run, why)
    referee.problems.append(f"the learner's channel was closed: {why}")


def _handle(referee: Referee, message: Any, sock: socket.socket, learner: Learner, run: str, helper: bool,
            arrived: float) -> None:
    from grader.harness.frame import FrameError, check_value

    if not isinstance(message, dict):
        raise ChannelError("a message that is not a mapping")
    try:
        check_value(message)
    except FrameError as exc:
        raise ChannelError(str(exc)) from None
    referee.arrived = arrived  # the whole message, received and checked
    op = message.get("op")
    if op == "ask" and isinstance(message.get("request"), dict):
        try:
            reply = referee.answer_helper(message["request"]) if helper else referee.answer(message["request"], learner)
        except ChannelError:
            raise
        except Exception as exc:  # noqa: BLE001 - a question the referee could not answer is refused
            referee.problems.append(f"the referee could not answer {str(message['request'])[:200]}: "
                                 f"{traceback.format_exc(limit=-3)[-1500:]}")
            raise ChannelError(f"a question the grader could not answer ({type(exc).__name__})") from None
        payload = json.dumps(reply).encode()
        sock.sendall(HEADER.pack(len(payload), ord("J")) + payload)
    elif helper:
        raise ChannelError(f"a helper sent {str(op)[:40]!r}; it may only ask")
    elif op == "event":
        _append(referee, run, message.get("event"))
    elif op == "amend":
        _amend(referee, run, message.get("index"), message.get("fields"))
    else:
        raise ChannelError(f"an unknown message {str(message)[:80]}")


def _append(referee: Referee, run: str, event: Any) -> None:
    from grader.core.events import MalformedEvent, check_event

    events = referee.events_of[run]
    if len(events) >= MAX_EVENTS:
        raise ChannelError(f"more than {MAX_EVENTS} events (calls the grader watches)")
    try:
        check_event(event)
    except MalformedEvent as exc:
        raise ChannelError(str(exc)) from None
    events.append({**event, "index": len(events)})  # numbered here, in the order it arrived


def _amend(referee: Referee, run: str, index: Any, fields: Any) -> None:
    from grader.core.events import AMENDABLE, MalformedEvent, check_event

    events = referee.events_of[run]
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
    thread = threading.Thread(target=serve, args=(referee, sock, learner, helper), daemon=True,
                              name="referee-helper" if helper else "referee")
    thread.start()
    return thread


__all__ = ["Learner", "Referee", "ChannelError", "Stopwatch", "serve_in_background", "MAX_EVENTS",
           "MAX_MESSAGE_BYTES", "MAX_STREAM_BYTES", "MAX_MESSAGE_ITEMS", "MAX_STREAM_ITEMS"]
