"""The live channel (grader/harness/channel.py, the learner's end grader/learner/channel.py): what the grading
side keeps, answers and refuses."""
from __future__ import annotations

import io
import json
import socket
import struct
import time
import tracemalloc
import zipfile

import pytest
import torch

from grader.harness import channel
from grader.harness.frame import FrameError, load
from grader.learner import channel as learner_channel


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


def forward(**more):
    return {"event": "forward", "line": 3, "autocast": True, "autocast_dtype": "float16", "weights_dtype": "float32",
            **more}


def mark(label: str) -> dict:
    return {"event": "mark", "label": label, "line": None}


def test_events_and_amendments_make_the_grading_sides_copy():
    grads = {"event": "optimizer.grads", "line": None, "via_scaler": True, "grads": {"w": torch.ones(2)},
             "params": {"w": torch.zeros(2)}}
    referee = serve(channel.Referee(1, "cpu"),
                    frame({"op": "event", "event": forward(index=41)}),
                    frame({"op": "amend", "index": 0, "fields": {"output_dtype": "float16"}}),
                    frame({"op": "event", "event": grads}, b"T"))
    # numbered by the grading side in the order they arrived, whatever index the learner's side gave
    assert referee.events[0] == forward(index=0, output_dtype="float16")
    assert torch.equal(referee.events[1]["grads"]["w"], torch.ones(2)) and referee.events[1]["index"] == 1
    assert referee.problems == [] and referee.refused is None


def test_a_question_gets_the_referees_answer():
    grader_end, learner_end = socket.socketpair()
    referee = Echo(1, "cpu")
    thread = channel.serve_in_background(referee, grader_end, NoLearner())
    learner = learner_channel.LearnerChannel(learner_end.detach())
    assert learner.ask({"n": 7}) == {"echo": 7}
    learner._sock.close()
    thread.join(timeout=5)


@pytest.mark.parametrize("bad, why", [
    (frame({"op": "amend", "index": 5, "fields": {}}), "never sent"),
    (frame({"op": "rewrite", "events": []}), "unknown message"),
    (struct.pack(">IB", channel.MAX_MESSAGE_BYTES + 1, ord("J")), "over the bounds"),
    (struct.pack(">IB", 3, ord("P")) + b"abc", "unknown kind"),
    (struct.pack(">IB", 3, ord("T")) + b"abc", "not a torch.save archive"),
    (frame({"op": "event", "event": {"event": "mark", "label": "x", "line": None,
                                     "x": torch.zeros(1).expand(10**6)}}, b"T"), "stride-0"),
    # events: a kind no spy records, a field its kind does not have, a field of the wrong type
    (frame({"op": "event", "event": {"event": "kept"}}), "unknown kind 'kept'"),
    (frame({"op": "event", "event": forward(verdict="passed")}), "a field 'verdict' it does not have"),
    (frame({"op": "event", "event": forward(autocast="yes")}), "whose 'autocast' is a str"),
    (frame({"op": "event", "event": {"event": "forward", "line": 1}}),
     "without autocast, autocast_dtype, weights_dtype"),
    # the past: a recorded field changed, a field no spy adds after the call, an event no longer the latest
    (frame({"op": "amend", "index": 0, "fields": {"autocast": False}}), "'autocast' of event 0"),
    (frame({"op": "amend", "index": 0, "fields": {"event": "scaler.step"}}), "'event' of event 0"),
    # numbers no float holds
    (frame({"op": "event", "event": mark("x") | {"n": 10**400}}), "too large"),
    (frame({"op": "event", "event": mark("x") | {"n": 10**400}}, b"T"), "too large"),
])
def test_what_the_grading_side_refuses_closes_the_channel_and_is_the_learners_doing(bad, why):
    referee = serve(channel.Referee(1, "cpu"), frame({"op": "event", "event": forward()}), bad,
                    frame({"op": "event", "event": mark("after")}))
    assert [e["event"] for e in referee.events] == ["forward"]
    assert why in referee.refused, referee.refused
    assert len(referee.problems) == 1 and why in referee.problems[0], referee.problems


def test_an_amendment_completes_only_the_latest_event_and_only_once():
    late = serve(channel.Referee(1, "cpu"), frame({"op": "event", "event": forward()}),
                 frame({"op": "event", "event": mark("after")}),
                 frame({"op": "amend", "index": 0, "fields": {"output_dtype": "float16"}}))
    assert "after later events" in late.refused and "output_dtype" not in late.events[0]
    twice = serve(channel.Referee(1, "cpu"), frame({"op": "event", "event": forward()}),
                  frame({"op": "amend", "index": 0, "fields": {"output_dtype": "float16"}}),
                  frame({"op": "amend", "index": 0, "fields": {"output_dtype": "float32"}}))
    assert "already recorded" in twice.refused and twice.events[0]["output_dtype"] == "float16"


def test_the_learners_side_amends_only_its_latest_event(monkeypatch):
    grader_end, learner_end = socket.socketpair()
    monkeypatch.setattr(learner_channel, "_learner", learner_channel.LearnerChannel(learner_end.detach()))
    referee = channel.Referee(1, "cpu")
    thread = channel.serve_in_background(referee, grader_end, NoLearner())
    first = learner_channel.emit(forward())
    learner_channel.amend(first, output_dtype="float16")
    second = learner_channel.emit(forward())
    learner_channel.amend(first, output_dtype="bfloat16")  # no longer the latest: not sent at all
    learner_channel.amend(second, output_dtype="float32")
    learner_channel._learner.close()
    thread.join(timeout=5)
    assert [e.get("output_dtype") for e in referee.events] == ["float16", "float32"]
    assert referee.refused is None


def test_a_compressed_archive_is_refused_before_it_is_unpacked():
    # A deflated run of zeros: 64 KB that declare 64 MB (tests/integrity sends a gigabyte). Read with its
    # directory first, it is never unpacked.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("archive/data/0", "w") as entry:
            for _ in range(4):
                entry.write(bytes(16 << 20))
    payload = buffer.getvalue()
    assert len(payload) < 128 << 10
    with pytest.raises(FrameError, match="compressed archive entry"):
        load(payload)


def test_the_grading_side_unpacks_nothing_larger_than_what_was_sent():
    payload = io.BytesIO()
    torch.save({"w": torch.zeros(1000)}, payload)
    assert torch.equal(load(payload.getvalue())["w"], torch.zeros(1000))
    with pytest.raises(FrameError, match="not a torch.save archive"):
        load(payload.getvalue()[:-30])  # the directory cut off


class Failing(channel.Referee):
    def answer(self, request, learner):
        return {"x": 1 / request["d"]}


@pytest.mark.parametrize("request_, why", [({"d": 0}, "ZeroDivisionError"), ({}, "KeyError")])
def test_a_referee_that_cannot_answer_refuses_and_its_thread_ends(request_, why):
    referee = serve(Failing(1, "cpu"), frame({"op": "ask", "request": request_}))
    assert why in referee.refused and any(why in p for p in referee.problems)


def test_the_number_of_events_is_capped(monkeypatch):
    monkeypatch.setattr(channel, "MAX_EVENTS", 3)
    referee = serve(channel.Referee(1, "cpu"), *[frame({"op": "event", "event": mark(str(i))}) for i in range(5)])
    assert len(referee.events) == 3 and "more than 3 events" in referee.problems[0]


def test_the_learners_side_stops_sending_quietly_once_the_grading_side_closes():
    grader_end, learner_end = socket.socketpair()
    learner = learner_channel.LearnerChannel(learner_end.detach())
    grader_end.close()
    for i in range(3):
        learner.emit({"i": i})  # a spy must not raise into the learner's code
    assert learner.closed
    with pytest.raises(ConnectionError):
        learner.ask({"n": 1})


def test_a_plain_referee_answers_no_questions():
    referee = serve(channel.Referee(1, "cpu"), frame({"op": "ask", "request": {"n": 1}}))
    assert "answers no questions" in referee.problems[0]


def test_the_helper_channel_only_asks():
    grader_end, helper_end = socket.socketpair()
    referee = channel.Referee(1, "cpu")
    thread = channel.serve_in_background(referee, grader_end, NoLearner(), helper=True)
    helper_end.sendall(frame({"op": "event", "event": mark("x")}))
    helper_end.shutdown(socket.SHUT_WR)
    thread.join(timeout=5)
    helper_end.close()
    assert referee.events == [] and "it may only ask" in referee.refused


class Clocked(channel.Referee):
    """Notes, for every question, the time the channel says it arrived."""

    def __init__(self, seed, device):
        super().__init__(seed, device)
        self.arrivals = []

    def answer(self, request, learner):
        self.arrivals.append(self.arrived)
        return {}


def test_a_message_arrives_when_its_last_byte_does_not_its_header():
    # A header sent ahead of its payload (the audit's A3: a timed round's finish question) stops no clock.
    grader_end, learner_end = socket.socketpair()
    referee = Clocked(1, "cpu")
    thread = channel.serve_in_background(referee, grader_end, NoLearner())
    whole = frame({"op": "ask", "request": {"op": "finish"}})
    learner_end.sendall(whole[:7])  # the header and two bytes of the payload
    time.sleep(0.3)
    rest_sent = time.perf_counter()
    learner_end.sendall(whole[7:])
    assert json.loads(learner_end.recv(1 << 16)[5:]) == {}
    learner_end.close()
    thread.join(timeout=5)
    assert referee.arrivals and referee.arrivals[0] >= rest_sent, (referee.arrivals, rest_sent)


def archive(pickle: bytes) -> bytes:
    """A torch.save archive of one small tensor whose data.pkl is `pickle` (for pickles torch.save never writes)."""
    plain = io.BytesIO()
    torch.save({"w": torch.zeros(1)}, plain)
    source, out = zipfile.ZipFile(io.BytesIO(plain.getvalue())), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as made:
        for info in source.infolist():
            made.writestr(info.filename, pickle if info.filename.endswith("data.pkl") else source.read(info))
    return struct.pack(">IB", len(out.getvalue()), ord("T")) + out.getvalue()


def _event(payload: bytes) -> bytes:  # a mark event whose "pad" is the pickled value `payload` builds
    return (b"\x80\x02}(X\x02\x00\x00\x00opX\x05\x00\x00\x00eventX\x05\x00\x00\x00event}(X\x05\x00\x00\x00event"
            b"X\x04\x00\x00\x00markX\x05\x00\x00\x00labelX\x01\x00\x00\x00xX\x04\x00\x00\x00lineNX\x03\x00\x00\x00pad"
            + payload + b"uu.")


@pytest.mark.parametrize("bad, why", [
    # JSON: 3 bytes on the wire, a 64-byte list in the grading process
    (frame({"op": "event", "event": mark("x") | {"pad": [[]] * 30_000}}), "more than 50000 items"),
    # pickles, read without being run: too many instructions, a set, a call torch.save never writes
    (archive(_event(b"](" + b"]" * 60_000 + b"e")), "more than 50000 items"),
    (archive(_event(b"\x8f")), "EMPTY_SET"),
    (archive(_event(b"c__builtin__\nbytearray\nJ\x00\xca\x9a;\x85R")), "bytearray"),
    (archive(_event(b"ctorch\nFloatStorage\nJ\x00\xca\x9a;\x85R")), "calls a storage type"),
    (archive(_event(b"ctorch._utils\n_rebuild_tensor_v2\n\x85")), "_rebuild_tensor_v2 into a tuple"),
])
def test_what_a_message_would_cost_once_decoded_is_counted_from_its_bytes(bad, why):
    referee = serve(channel.Referee(1, "cpu"), frame({"op": "event", "event": forward()}), bad)
    assert [e["event"] for e in referee.events] == ["forward"]
    assert why in referee.refused, referee.refused


def test_torch_saves_own_messages_pass_the_count_before_decoding():
    # accumulate-amp's largest: an optimizer.grads event of a model's gradients and weights
    grads = {"event": "optimizer.grads", "line": None, "via_scaler": True,
             "grads": {f"layer{i}.weight": torch.ones(8, 8) for i in range(20)} | {"none": None},
             "params": {f"layer{i}.weight": torch.zeros(8, 8, dtype=torch.float16) for i in range(20)}}
    referee = serve(channel.Referee(1, "cpu"), frame({"op": "event", "event": grads}, b"T"),
                    frame({"op": "event", "event": mark("x") | {"n": [1.5, None, True, "s", (1, 2), 10**12]}}, b"T"))
    assert referee.refused is None and len(referee.events) == 2, referee.problems
    assert torch.equal(referee.events[0]["grads"]["layer3.weight"], torch.ones(8, 8))


def test_json_that_would_expand_is_refused_before_the_grading_side_holds_it():
    # The audit's A4 message: ~600 KB of empty lists, ~13 MB once decoded; ten of them held 130 MB.
    body = ",".join(["[]"] * 199_900)
    one = b'{"op":"event","event":{"event":"mark","label":"x","line":null,"pad":[' + body.encode() + b"]}}"
    attack = struct.pack(">IB", len(one), ord("J")) + one
    tracemalloc.start()
    try:
        started = time.monotonic()
        referee = serve(channel.Referee(1, "cpu"), *[attack] * 10)
        seconds, (_, peak) = time.monotonic() - started, tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert referee.events == [] and "items" in referee.refused, referee.refused
    assert peak < 16 * 1024 * 1024, f"the grading side held {peak / 2**20:.0f} MB"
    assert seconds < 2


def test_the_items_of_all_a_runs_messages_are_capped(monkeypatch):
    monkeypatch.setattr(channel, "MAX_STREAM_ITEMS", 100)
    referee = serve(channel.Referee(1, "cpu"), *[frame({"op": "event", "event": mark(str(i)) | {"pad": [[]] * 10}})
                                                 for i in range(10)])
    assert 0 < len(referee.events) < 10 and "more than 100 items in all" in referee.refused, referee.refused
