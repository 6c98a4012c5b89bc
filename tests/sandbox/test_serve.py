"""The one-request protocol of grading containers (grader/harness/serve.py), without Docker."""
import io
import json

import pytest

from grader.harness.serve import MAX_REQUEST_BYTES, RequestError, exercise_dir, read_request
from tests.conftest import EXERCISES


def request(**fields) -> io.BytesIO:
    return io.BytesIO(json.dumps(fields).encode() + b"\n")


def test_a_request_is_one_json_line():
    got = read_request(request(exercise="mixed-precision/amp-step", code="x = 1\n", seed=5))
    assert got == {"exercise": "mixed-precision/amp-step", "code": "x = 1\n", "seed": 5}


def test_end_of_input_without_a_request_means_shut_down():
    assert read_request(io.BytesIO(b"")) is None


@pytest.mark.parametrize("line, message", [
    (b"not json\n", "not JSON"),
    (b'["a list"]\n', "string fields"),
    (b'{"exercise": "mixed-precision/amp-step"}\n', "string fields"),
    (b'{"exercise": "a/b", "code": "", "seed": "7"}\n', "'seed' must be an integer"),
    (b'{"exercise": "a/b", "code": "' + b"x" * (MAX_REQUEST_BYTES + 10) + b'"}\n', "larger than"),
])
def test_malformed_requests_are_refused(line, message):
    with pytest.raises(RequestError, match=message):
        read_request(io.BytesIO(line))


@pytest.mark.parametrize("exercise", ["../etc", "mixed-precision/../../etc", "/etc/passwd", "a/b/c",
                                      "mixed-precision/.hidden", "mixed-precision/no-such-exercise"])
def test_exercise_ids_cannot_leave_the_exercises_folder(exercise):
    with pytest.raises(RequestError):
        exercise_dir(EXERCISES, exercise)


def test_a_known_exercise_is_found():
    assert exercise_dir(EXERCISES, "mixed-precision/amp-step") == EXERCISES / "mixed-precision" / "amp-step"
