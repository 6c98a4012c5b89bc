"""The one way to grade: the CLI, the web app and the queue worker all call `run_submission`."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jsonschema

from grader.course import Course, Exercise, load_course
from grader.harness.main import MAX_CODE_BYTES  # the harness enforces the same limit on its input
from grader.result import build_result, infra_result, validate_raw, validate_result



class SubmissionError(ValueError):
    """The submission cannot be graded at all (not text, too large): a usage error, not a failure."""


def decode_submission(data: bytes) -> str:
    """Bytes from a file or request body to code, or a SubmissionError saying what is wrong."""
    if len(data) > MAX_CODE_BYTES:
        raise SubmissionError(f"the submission is {len(data) / 1024:.0f} KB; the limit is "
                              f"{MAX_CODE_BYTES // 1024} KB")
    if b"\x00" in data:
        raise SubmissionError("the submission is a binary file, not Python source")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SubmissionError(f"the submission is not UTF-8 text (byte {exc.start})") from None


def resolve_exercise(ref: str | Exercise, course: Course | None = None) -> Exercise:
    if isinstance(ref, Exercise):
        return ref
    return (course or load_course()).find_exercise(ref)


def run_submission(exercise: str | Exercise, code: str, *, sandbox: str = "auto", seed: int | None = None,
                   course: Course | None = None, hide: list[Path] | None = None) -> dict[str, Any]:
    """Grade `code` against `exercise` and return the result object (see grader/schemas/result.json).

    `hide`: host paths the learner's code must not see (e.g. the web app's database folder).
    Raises KeyError for an unknown exercise and SubmissionError for code that cannot be graded; any
    failure of the grading machinery itself is returned as status "infra-error", never raised.
    """
    from sandbox import SandboxError, get_sandbox

    exercise = resolve_exercise(exercise, course)
    if len(code.encode("utf-8")) > MAX_CODE_BYTES:
        raise SubmissionError(f"the submission is larger than {MAX_CODE_BYTES // 1024} KB")
    started = time.monotonic()
    name = sandbox
    try:
        runner = get_sandbox(sandbox, hide=hide)
        name = runner.name
        raw = runner.run(exercise, code, seed=seed)
        validate_raw(raw)
    except (SandboxError, jsonschema.ValidationError) as exc:
        message = exc.message if isinstance(exc, jsonschema.ValidationError) else str(exc)
        return infra_result(exercise, name, f"The grader failed: {message}", time.monotonic() - started)
    result = build_result(exercise, raw, name, time.monotonic() - started)
    validate_result(result)
    return result
