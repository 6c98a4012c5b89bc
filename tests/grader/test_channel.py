"""The live channel (grader/harness/channel.py): what the grading side keeps, answers and refuses."""
from __future__ import annotations

import io
import json
import socket
import struct

import pytest
import torch

from grader.harness import channel


class NoLearner:
    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass


class Echo(channel.Referee):
    def answer(self, request, learner):
        return {"echo": request.get("n")}


def frame(message, kind=b"J") -> bytes:
    if kind == b"J":
        payload = json.dumps(message).encode()
    else:
        buffer = io.BytesIO()
        torch.save(message, buffer)
        payload = buffer.getvalue()
    return struct.pack(">IB", len(payload), kind[0]) + payload


def serve(referee, *frames: bytes) -> channel.Referee:
    grader_end, learner_end = socket.socketpair()
    thread = channel.serve_in_background(referee, grader_end, NoLearner())
    try:
        for f in frames:
            learner_end.sendall(f)
        learner_end.shutdown(socket.SHUT_WR)
    except BrokenPipeError:
        pass  # the grading side closed the channel: what follows is not read
    thread.join(timeout=5)
    learner_end.close()
    assert not thread.is_alive()
    return referee


def test_events_and_amendments_make_the_grading_sides_copy():
    referee = serve(channel.Referee(1, "cpu"),
                    frame({"op": "event", "event": {"event": "forward", "line": 3}}),
                    frame({"op": "event", "event": {"event": "grads", "g": torch.ones(2)}}, b"T"),
                    frame({"op": "amend", "index": 0, "fields": {"output_dtype": "float16"}}))
    assert referee.events[0] == {"event": "forward", "line": 3, "output_dtype": "float16"}
    assert torch.equal(referee.events[1]["g"], torch.ones(2))
    assert referee.problems == []


def test_a_question_gets_the_referees_answer():
    grader_end, learner_end = socket.socketpair()
    referee = Echo(1, "cpu")
    thread = channel.serve_in_background(referee, grader_end, NoLearner())
    learner = channel.LearnerChannel(learner_end.detach())
    assert learner.ask({"n": 7}) == {"echo": 7}
    learner._sock.close()
    thread.join(timeout=5)


@pytest.mark.parametrize("bad, why", [
    (frame({"op": "amend", "index": 5, "fields": {}}), "never sent"),
    (frame({"op": "rewrite", "events": []}), "unknown message"),
    (struct.pack(">IB", channel.MAX_MESSAGE_BYTES + 1, ord("J")), "over the bounds"),
    (struct.pack(">IB", 3, ord("P")) + b"abc", "unknown kind"),
    (struct.pack(">IB", 3, ord("T")) + b"abc", "unreadable"),
    (frame({"op": "event", "event": {"x": torch.zeros(1).expand(10**6)}}, b"T"), "stride-0"),
])
def test_what_the_grading_side_refuses_closes_the_channel_with_a_note(bad, why):
    referee = serve(channel.Referee(1, "cpu"), frame({"op": "event", "event": {"event": "kept"}}), bad,
                    frame({"op": "event", "event": {"event": "after"}}))
    assert [e["event"] for e in referee.events] == ["kept"]
    assert len(referee.problems) == 1 and why in referee.problems[0], referee.problems


def test_the_number_of_events_is_capped(monkeypatch):
    monkeypatch.setattr(channel, "MAX_EVENTS", 3)
    referee = serve(channel.Referee(1, "cpu"), *[frame({"op": "event", "event": {"i": i}}) for i in range(5)])
    assert len(referee.events) == 3 and "more than 3 events" in referee.problems[0]


def test_the_learners_side_stops_sending_quietly_once_the_grading_side_closes():
    grader_end, learner_end = socket.socketpair()
    learner = channel.LearnerChannel(learner_end.detach())
    grader_end.close()
    for i in range(3):
        learner.emit({"i": i})  # a spy must not raise into the learner's code
    assert learner.closed
    with pytest.raises(ConnectionError):
        learner.ask({"n": 1})


def test_a_plain_referee_answers_no_questions():
    referee = serve(channel.Referee(1, "cpu"), frame({"op": "ask", "request": {"n": 1}}))
    assert "answers no questions" in referee.problems[0]
