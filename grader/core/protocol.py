"""The harness protocol: what goes into a grading process and what comes out, in one place.

Every sandbox starts the same entry (`python -m grader.harness`, see grader/harness/serve.py) and talks
to it the same way, one JSON object per line:

    harness -> sandbox   {"type": "ready", "warm_s": 1.9}            imports warmed, waiting for a request
    sandbox -> harness   {"kind": "grade", "exercise": "lesson/ex", "code": "...", "seed": 7}
    harness -> sandbox   {"type": "verdict", "verdict": {...RawVerdict...}}   then the process exits

One request per process: a process that has graded a submission never sees another one.

A request of kind "run" runs the learner's function once on the exercise's example (`example.py`)
without grading: the verdict's status is "ran" (or error, timeout, killed when it did not get that far),
its `run` holds the repr of what the function returned, its `output` what the code printed.

Room is reserved for what comes next: spy events streamed while the learner's code runs (integrity)
will be lines of type "event" before the verdict. Today a harness sends none, and a reader refuses any
line type it does not know.

Limits and caps live here and are checked once, where data crosses a boundary: `Request.decode` in
the harness, `RawVerdict.decode` in the sandbox, `check_code_size` at the edges that accept code.
Error verdicts have one constructor, `error_verdict`.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from grader.core import jsonschemas
from sandbox.settings import REPLY_CAP

MAX_CODE_BYTES = 256 * 1024  # a submission's source, UTF-8
# JSON escaping can make code up to 6x longer (\uXXXX); anything beyond that is not a real request.
MAX_REQUEST_BYTES = 6 * MAX_CODE_BYTES + 4096
VERDICT_CAP = REPLY_CAP  # one verdict line: a sandbox takes no longer reply (sandbox/settings.py)
TEXT_CAP = 4000  # characters of one message, hint, note or problem in a verdict (RawVerdict.bounded)
MAX_PROBLEMS = 40
MAX_LINE = 1_000_000  # the largest submission line a verdict marks (256 KB of code has fewer lines)
MAX_INDEX = 2**31 - 1  # the largest event index a verdict names (the grading side's, far fewer: wire.MAX_EVENTS)
MAX_FIGURES = 12  # figures in one verdict (raw-verdict.json)
CHECK_ID_CAP = 100  # characters of a check id a result names (`explained_by`)


def submission_line(value: Any) -> int | None:
    """`value` as a line of the submission a verdict may mark: a whole number from 1 to MAX_LINE, else None.
    Lines reach a verdict from what the learner's process recorded or sent (a spy's stack, a probe's
    observation, an error's traceback), so they are data: anything else marks no line."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_LINE:
        return value
    return None


def event_index(value: Any) -> int | None:
    """`value` as the index of a recorded event a verdict may mark (0 to MAX_INDEX), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INDEX:
        return value
    return None


def as_check_id(value: Any) -> str | None:
    """`value` as a check id a result may name, else None."""
    return value if isinstance(value, str) and 0 < len(value) <= CHECK_ID_CAP else None


class ProtocolError(Exception):
    """A message broke the protocol (malformed, too large, unknown kind): the sender's bug."""


class CodeTooLarge(ValueError):
    """The submission is over MAX_CODE_BYTES: a usage error at the edge that accepted it."""


def check_code_size(code: str) -> None:
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > MAX_CODE_BYTES:
        raise CodeTooLarge(f"the submission is {size / 1024:.0f} KB; the limit is {MAX_CODE_BYTES // 1024} KB")


class Status(str, Enum):
    """How a grading ended. PASSED/FAILED: the checks ran. The others: they could not."""
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # the learner's code did not load or raised
    TIMEOUT = "timeout"  # the learner's code ran past its time limit
    KILLED = "killed"  # stopped for a resource (memory, output, CPU, file size) or by a signal
    INFRA_ERROR = "infra-error"  # the grader itself failed: not the learner's doing
    RAN = "ran"  # a run request: the learner's function returned (no checks ran, no verdict on the code)


class RequestKind(str, Enum):
    GRADE = "grade"  # run the checks, return a verdict
    RUN = "run"  # call the learner's function once on the exercise's example.py, return what it did


@dataclass(frozen=True)
class Request:
    exercise: str  # "lesson/exercise", resolved under the harness's exercises folder
    code: str
    seed: int | None = None
    kind: RequestKind = RequestKind.GRADE

    def __post_init__(self) -> None:
        check_code_size(self.code)

    def encode(self) -> bytes:
        return json.dumps({"kind": self.kind.value, "exercise": self.exercise, "code": self.code,
                           "seed": self.seed}).encode() + b"\n"

    @classmethod
    def decode(cls, line: bytes) -> Request:
        if len(line) > MAX_REQUEST_BYTES:
            raise ProtocolError(f"request larger than {MAX_REQUEST_BYTES} bytes")
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise ProtocolError(f"request is not JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("exercise"), str) \
                or not isinstance(data.get("code"), str):
            raise ProtocolError("request needs string fields 'exercise' and 'code'")
        seed = data.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ProtocolError("'seed' must be an integer")
        try:
            kind = RequestKind(data.get("kind", "grade"))
        except ValueError:
            raise ProtocolError(f"unknown request kind {data.get('kind')!r}") from None
        try:
            return cls(data["exercise"], data["code"], seed, kind)
        except CodeTooLarge as exc:
            raise ProtocolError(str(exc)) from None


@dataclass(frozen=True)
class ErrorInfo:
    """Why the checks could not run: learner-facing `message`, the submission `line` to mark."""
    kind: str
    message: str
    line: int | None = None


@dataclass
class RawVerdict:
    """What one grading process produces (grader/core/schemas/raw-verdict.json); grader/core/result.py turns it
    into the result a learner sees, adding titles, hints and the sandbox's name."""
    status: Status
    error: ErrorInfo | None = None
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> {passed, message, line, detail}
    device: str | None = None
    notes: list[str] = field(default_factory=list)
    output: str = ""
    output_truncated: bool = False
    seed: int | None = None
    problems: list[str] = field(default_factory=list)  # for the exercise's author, never the learner
    trace: dict[str, Any] | None = None  # grader/core/display.py: what the learner's code did, call by call
    figures: list[dict[str, Any]] = field(default_factory=list)
    run: dict[str, Any] | None = None  # a run request's {returned, returned_truncated}

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data

    def bounded(self) -> RawVerdict:
        """This verdict within VERDICT_CAP and in raw-verdict.json's shape, whatever the learner's code made
        the checks say: every check's result as `conformed_check` keeps it, texts cut to TEXT_CAP, at most
        MAX_PROBLEMS problems, the trace and figures as grader.core.display.conformed keeps them. A verdict the
        sandbox could not read would be reported as the platform's failure, with the learner's seed lost."""
        from grader.core.display import conformed

        self.trace, self.figures, cut = conformed(self.trace, self.figures)
        if self.error is not None:
            self.error = ErrorInfo(str(self.error.kind)[:40], _cut(str(self.error.message)),
                                   submission_line(self.error.line))
        for name, result in list(self.checks.items()):
            self.checks[name], wrong = conformed_check(result)
            cut.extend(f"check '{name}': {text}" for text in wrong)
        problems = [_cut(p) for p in [*self.problems, *cut]]
        if len(problems) > MAX_PROBLEMS:
            problems = problems[:MAX_PROBLEMS] + [f"... and {len(problems) - MAX_PROBLEMS} more"]
        self.problems = problems
        self.notes = [_cut(n) for n in self.notes[:MAX_PROBLEMS]]
        return self

    def encode(self) -> bytes:
        return json.dumps({"type": "verdict", "verdict": self.to_dict()}, default=str).encode() + b"\n"

    @classmethod
    def from_dict(cls, data: Any) -> RawVerdict:
        """A verdict that crossed a process or container boundary: trust nothing unchecked."""
        from jsonschema import ValidationError  # here: the web app's commands import this module

        try:
            jsonschemas.validate(data, "raw-verdict")
        except ValidationError as exc:
            raise ProtocolError(f"malformed verdict: {exc.message}") from None
        error = data.get("error")
        return cls(status=Status(data["status"]), error=ErrorInfo(**error) if error else None,
                   checks=data.get("checks") or {}, device=data.get("device"), notes=list(data.get("notes") or []),
                   output=data.get("output", ""), output_truncated=bool(data.get("output_truncated", False)),
                   seed=data.get("seed"), problems=list(data.get("problems") or []), run=data.get("run"),
                   trace=data.get("trace"), figures=list(data.get("figures") or []))


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_CAP else text[:TEXT_CAP - 20] + " ... (cut)"


def _shown(value: Any) -> str:
    """A short description of a value that did not fit, for the author."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = repr(value) if not isinstance(value, int) or value.bit_length() < 64 else f"{value.bit_length()}-bit int"
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a {type(value).__name__}"


CHECK_FIELDS = ("passed", "message", "line", "event", "hint", "explained_by")


def conformed_check(result: Any) -> tuple[dict[str, Any], list[str]]:
    """One check's result in raw-verdict.json's shape (the plugin's keys: CHECK_FIELDS), and what did not fit
    and was left out, for the author. A line or an event that is not one marks nothing; a result that is not
    a mapping, or says neither passed nor failed, is a failure. The checking API (grader.checks.grading.checking)
    refuses such values where a check hands them over, saying so to the learner; this is the last guard."""
    if not isinstance(result, dict):
        return {"passed": False, "message": ""}, [f"a result that is {_shown(result)}: reported failed"]
    wrong = [f"'{str(key)[:40]}' left out" for key in result if key not in CHECK_FIELDS]
    passed = result.get("passed")
    if not isinstance(passed, bool):
        wrong.append(f"passed={_shown(passed)} is no verdict: reported failed")
        passed = False
    message = result.get("message", "")
    if not isinstance(message, str):
        wrong.append(f"message {_shown(message)} left out")
        message = ""
    kept: dict[str, Any] = {"passed": passed, "message": _cut(message)}
    for key, conform in (("line", submission_line), ("event", event_index)):
        value = result.get(key)
        kept[key] = conform(value)
        if value is not None and kept[key] is None:
            wrong.append(f"{key} {_shown(value)} is not one: left out")
    if result.get("hint") is not None:  # None: the exercise's own hint, as when there is no key
        if isinstance(result["hint"], str):
            kept["hint"] = _cut(result["hint"])
        else:
            wrong.append(f"hint {_shown(result['hint'])} left out")
    if result.get("explained_by") is not None:
        if as_check_id(result["explained_by"]) is not None:
            kept["explained_by"] = result["explained_by"]
        else:
            wrong.append(f"explained_by {_shown(result['explained_by'])} is no check id: left out")
    return kept, wrong


def error_verdict(status: Status, kind: str, message: str, line: int | None = None) -> RawVerdict:
    """The one way to build a verdict for a grading whose checks could not run."""
    return RawVerdict(status=status, error=ErrorInfo(kind, message, line))


def learner_timeout(limit_s: float) -> RawVerdict:
    """The learner's code ran past its time limit (stopped by the harness, or by the sandbox when the
    whole grading process outlived the limit plus CHECKS_GRACE_S)."""
    return error_verdict(Status.TIMEOUT, "timeout", f"Time limit of {limit_s:g} s exceeded: your code was stopped.")


def infra_error(message: str) -> RawVerdict:
    return error_verdict(Status.INFRA_ERROR, "infra", message)


def ready_line(warm_s: float) -> bytes:
    return json.dumps({"type": "ready", "warm_s": round(warm_s, 3)}).encode() + b"\n"


def parse_output_line(line: bytes) -> tuple[str, Any]:
    """One line from a harness: ("ready", None) or ("verdict", RawVerdict). ProtocolError otherwise."""
    if len(line) > VERDICT_CAP:
        raise ProtocolError(f"a line of {len(line)} bytes is over the {VERDICT_CAP}-byte cap")
    try:
        message = json.loads(line)
    except ValueError:
        raise ProtocolError("the grading process printed something that is not a protocol message") from None
    kind = message.get("type") if isinstance(message, dict) else None
    if kind == "ready":
        return "ready", None
    if kind == "verdict":
        return "verdict", RawVerdict.from_dict(message.get("verdict"))
    raise ProtocolError(f"unknown message type {kind!r} from the grading process")
