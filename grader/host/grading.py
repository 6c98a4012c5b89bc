"""The one way to grade: the CLI, the web app and the queue worker all call `run_submission`; a Run (the
learner's function once on the exercise's example, no verdict) is its sibling `run_example`, through the
same sandbox and protocol."""
from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Protocol, cast

from grader.core.course import Course, Exercise, load_course
from grader.core.protocol import (
    CodeTooLarge,
    ProtocolError,
    RawVerdict,
    Request,
    RequestKind,
    Status,
    check_code_size,
    error_verdict,
    infra_error,
    learner_timeout,
    parse_output_line,
)
from grader.core.result import Result, RunResult, RunStatus, build_result
from sandbox import Ending, Reply


class GradesWork(Protocol):
    """What `run_submission` grades through besides a name: a HarnessSandbox, or one that makes its
    HarnessSandbox on first use (the web app's academy.jobs.sandbox.GradingSandbox)."""

    @property
    def name(self) -> str: ...

    def grade(self, exercise: Exercise, request: Request) -> Reply: ...


class SubmissionError(ValueError):
    """The submission cannot be graded at all (not text, too large): a usage error, not a failure."""


def decode_submission(data: bytes) -> str:
    """Bytes from a file or request body to code, or a SubmissionError saying what is wrong (the size by
    the protocol's one check, as every edge that accepts code)."""
    if b"\x00" in data:
        raise SubmissionError("the submission is a binary file, not Python source")
    try:
        code = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SubmissionError(f"the submission is not UTF-8 text (byte {exc.start})") from None
    try:
        check_code_size(code)
    except CodeTooLarge as exc:
        raise SubmissionError(str(exc)) from None
    return code


def resolve_exercise(ref: str | Exercise, course: Course | None = None) -> Exercise:
    """`ref` itself, or the exercise of that id in `course` (default: the course on disk); KeyError if none."""
    if isinstance(ref, Exercise):
        return ref
    return (course or load_course()).find_exercise(ref)


def run_submission(exercise: str | Exercise, code: str, *, sandbox: str | GradesWork = "auto",
                   seed: int | None = None, course: Course | None = None,
                   hide: list[Path] | None = None) -> Result:
    """Grade `code` against `exercise` and return the result object (see grader/core/schemas/result.json).

    `sandbox`: a name (a cold sandbox is made for this one submission) or a sandbox the caller keeps,
    with its warm pool (the web app, the worker). `hide`: host paths the learner's code must not see
    (e.g. the web app's database folder) when a sandbox is made here.
    Raises KeyError for an unknown exercise and SubmissionError for code that cannot be graded; any
    failure of the grading machinery itself is returned as status "infra-error", never raised.
    """
    exercise = resolve_exercise(exercise, course)
    raw, name, duration = _through_sandbox(exercise, code, RequestKind.GRADE, sandbox, seed, hide)
    # Validated once, where it crossed from the sandbox (verdict_of: raw-verdict.json, then its trace and figures
    # in build_result); the result is built here from those parts and the exercise, so it is not validated again
    # (tests validate what build_result makes: tests/web/test_grading.py, tests/grader/mutated_observations.py).
    return build_result(exercise, raw, name, duration)


def run_example(exercise: str | Exercise, code: str, *, sandbox: str | GradesWork = "auto",
                seed: int | None = None, course: Course | None = None,
                hide: list[Path] | None = None) -> RunResult:
    """A Run: call the learner's function once on the exercise's `example.py`, in the same sandbox and through
    the same protocol as a grading (a request of kind "run"), and return what happened, without a verdict:

        {"exercise", "status": ran | error | timeout | killed | infra-error, "output", "output_truncated",
         "returned" (repr, or null), "returned_truncated", "error" ({kind, message, line} or null),
         "device", "notes", "sandbox", "duration_s"}

    Same arguments and exceptions as `run_submission`."""
    exercise = resolve_exercise(exercise, course)
    raw, name, duration = _through_sandbox(exercise, code, RequestKind.RUN, sandbox, seed, hide)
    ran = raw.run if raw.status is Status.RAN and raw.run else None
    on_cpu = bool(raw.device and not raw.device.startswith("cuda"))
    status = cast(RunStatus, raw.status.value)  # a run request's verdict: never passed or failed
    return {"exercise": exercise.id, "status": status, "output": raw.output,
            "output_truncated": raw.output_truncated, "returned": ran["returned"] if ran else None,
            "returned_truncated": bool(ran and ran["returned_truncated"]),
            "error": asdict(raw.error) if raw.error else None, "device": raw.device,
            "notes": [exercise.cpu_note] if exercise.cpu_note and on_cpu else [],
            "sandbox": name, "duration_s": round(duration, 3)}


def _through_sandbox(exercise: Exercise, code: str, kind: RequestKind, sandbox: str | GradesWork,
                     seed: int | None, hide: list[Path] | None) -> tuple[RawVerdict, str, float]:
    """One request through a sandbox: (the raw verdict, the sandbox's name, seconds it took)."""
    from grader.host.sandboxes import get_sandbox
    from sandbox import SandboxError

    try:
        request = Request(exercise.id, code, seed, kind)
    except CodeTooLarge as exc:
        raise SubmissionError(str(exc)) from None
    started = time.monotonic()
    name = sandbox if isinstance(sandbox, str) else sandbox.name
    try:
        runner = get_sandbox(sandbox, hide=hide) if isinstance(sandbox, str) else sandbox
        name = runner.name
        raw = verdict_of(runner.grade(exercise, request), exercise.time_limit_s)
    except (SandboxError, ProtocolError) as exc:
        raw = infra_error(f"The grader failed: {exc}")
    return raw, name, time.monotonic() - started


def verdict_of(reply: Reply, time_limit_s: float) -> RawVerdict:
    """The raw verdict a sandbox's reply holds, or says (for work whose learner limit was `time_limit_s`):
    ProtocolError for a reply that is not one."""
    if reply.ending is Ending.DEADLINE:
        return learner_timeout(time_limit_s)
    if reply.ending is Ending.OUT_OF_MEMORY:
        return error_verdict(Status.KILLED, "memory", f"Your code's container was killed: it used more than its "
                             f"{reply.memory_mb} MB of memory.")
    kind, verdict = parse_output_line(reply.line or b"")
    if kind != "verdict":
        raise ProtocolError(f"the grading process sent {kind!r} where a verdict was due")
    return cast(RawVerdict, verdict)  # parse_output_line: a "verdict" line holds one
