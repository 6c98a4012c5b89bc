"""The harness protocol (grader/core/protocol.py) and the one entry (grader/harness/serve.py), without Docker:
malformed messages are refused at the edge, exercise ids cannot leave the exercises folder, a learner
stopped by a sandbox gets a verdict about its code, and the entry speaks the protocol end to end."""
import io
import subprocess
import sys

import pytest

from grader.core.protocol import (
    MAX_CODE_BYTES,
    MAX_REQUEST_BYTES,
    VERDICT_CAP,
    CodeTooLarge,
    ProtocolError,
    RawVerdict,
    Request,
    RequestKind,
    Status,
    error_verdict,
    parse_output_line,
    ready_line,
)
from grader.harness.serve import exercise_under, read_request
from sandbox import Entry
from sandbox.process import PopenProcess
from tests.support.grading import answer_verdict
from tests.support.paths import EXERCISES, REPO

SOLUTION = (EXERCISES / "mixed-precision" / "amp-step" / "solution.py").read_text()


def test_a_request_round_trips_as_one_json_line():
    request = Request("mixed-precision/amp-step", "x = 1\n", 5)
    line = request.encode()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert read_request(io.BytesIO(line)) == request


def test_a_run_request_round_trips_with_its_kind():
    request = Request("mixed-precision/amp-step", "x = 1\n", 5, RequestKind.RUN)
    assert b'"kind": "run"' in request.encode() and read_request(io.BytesIO(request.encode())) == request


def test_a_run_verdict_carries_what_the_function_returned():
    verdict = RawVerdict(status=Status.RAN, output="hi\n", run={"returned": "3", "returned_truncated": False})
    kind, decoded = parse_output_line(verdict.encode())
    assert kind == "verdict" and decoded.status is Status.RAN and decoded.run == verdict.run
    with pytest.raises(ProtocolError, match="malformed verdict"):
        RawVerdict.from_dict({"status": "ran", "run": {"returned": 3, "returned_truncated": False}})


def test_end_of_input_without_a_request_means_shut_down():
    assert read_request(io.BytesIO(b"")) is None


@pytest.mark.parametrize("line, message", [
    (b"not json\n", "not JSON"),
    (b'["a list"]\n', "string fields"),
    (b'{"exercise": "mixed-precision/amp-step"}\n', "string fields"),
    (b'{"exercise": "a/b", "code": "", "seed": "7"}\n', "'seed' must be an integer"),
    (b'{"exercise": "a/b", "code": "", "seed": true}\n', "'seed' must be an integer"),
    (b'{"kind": "format-disk", "exercise": "a/b", "code": ""}\n', "unknown request kind"),
    (b'{"exercise": "a/b", "code": "' + b"x" * (MAX_CODE_BYTES + 10) + b'"}\n', "limit is 256 KB"),
    (b'{"exercise": "a/b", "code": "' + b"x" * (MAX_REQUEST_BYTES + 10) + b'"}\n', "larger than"),
])
def test_malformed_requests_are_refused(line, message):
    with pytest.raises(ProtocolError, match=message):
        Request.decode(line)


def test_code_size_is_checked_where_a_request_is_made():
    with pytest.raises(CodeTooLarge, match="limit is 256 KB"):
        Request("a/b", "x" * (MAX_CODE_BYTES + 1))


@pytest.mark.parametrize("exercise", ["../etc", "mixed-precision/../../etc", "/etc/passwd", "a/b/c",
                                      "mixed-precision/.hidden", "mixed-precision/no-such-exercise"])
def test_exercise_ids_cannot_leave_the_exercises_folder(exercise):
    with pytest.raises(ProtocolError):
        exercise_under(EXERCISES, exercise)


def test_a_known_exercise_is_resolved_once_from_its_id():
    exercise = exercise_under(EXERCISES, "mixed-precision/amp-step")
    assert exercise.id == "mixed-precision/amp-step" and exercise.path == EXERCISES / "mixed-precision" / "amp-step"


def test_verdicts_are_validated_when_they_cross_a_boundary():
    verdict = error_verdict(Status.TIMEOUT, "timeout", "stopped", 3)
    kind, back = parse_output_line(verdict.encode().rstrip(b"\n"))
    assert kind == "verdict" and back == verdict
    assert parse_output_line(ready_line(1.5).rstrip()) == ("ready", None)
    for bad in (b'{"type": "verdict", "verdict": {"status": "won"}}',
                b'{"type": "verdict", "verdict": {"status": "passed", '
                b'"error": {"kind": "x", "message": "m", "evil": 1}}}',
                b'{"type": "telemetry"}', b"PASSED", b"x" * (VERDICT_CAP + 1)):
        with pytest.raises(ProtocolError):
            parse_output_line(bad)


ENTRY = Entry((sys.executable, "-m", "grader.harness", "--exercises", str(EXERCISES)))


def harness(*args: str) -> PopenProcess:
    return PopenProcess("test", ENTRY.with_args(*args), env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})


def test_the_entry_says_ready_takes_one_request_and_answers_one_verdict():
    process = harness()
    try:
        verdict = answer_verdict(process, Request("mixed-precision/amp-step", SOLUTION, 11), 10)
    finally:
        process.close()
    assert isinstance(verdict, RawVerdict) and verdict.status is Status.PASSED and verdict.seed == 11
    assert set(verdict.checks) >= {"runs", "matches-reference"}


def test_a_bad_request_is_an_infra_error_from_the_entry():
    proc = subprocess.run([sys.executable, "-m", "grader.harness", "--exercises", str(EXERCISES)],
                          input=b'{"exercise": "../../etc", "code": ""}\n', capture_output=True, timeout=120,
                          cwd=REPO)
    lines = proc.stdout.splitlines()
    assert [parse_output_line(line)[0] for line in lines] == ["ready", "verdict"]
    verdict = parse_output_line(lines[1])[1]
    assert verdict.status is Status.INFRA_ERROR and "bad request" in verdict.error.message


def test_a_grading_process_past_its_deadline_gives_a_timeout_verdict_not_an_infra_error(monkeypatch):
    # Stop the harness itself (not just the learner) mid-grade: the sandbox's deadline must speak
    # about the learner's code, through the protocol's one constructor.
    import sandbox.process as process_module

    monkeypatch.setattr(process_module, "GRACE_S", 0.5)
    process = harness()
    try:
        code = "def train_step(*args):\n    while True:\n        pass\n"
        verdict = answer_verdict(process, Request("mixed-precision/amp-step", code), 0.5)
    finally:
        process.close()
    assert verdict.status is Status.TIMEOUT
    assert verdict.error.message == "Time limit of 0.5 s exceeded: your code was stopped."
