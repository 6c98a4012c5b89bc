"""The result of grading one submission: the JSON object `grader check --json` prints, the web API
returns and the database stores. One type (`Result`, a typed mapping: it is stored and sent as JSON), one
builder, one schema (grader/core/schemas/result.json), one upgrade path for stored ones."""
from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal, TypedDict, cast

from grader.core import jsonschemas
from grader.core.course import Exercise
from grader.core.protocol import RawVerdict, as_check_id, event_index, submission_line

CheckStatus = Literal["passed", "failed", "skipped"]
ResultStatus = Literal["passed", "failed", "error", "timeout", "killed", "infra-error"]
RunStatus = Literal["ran", "error", "timeout", "killed", "infra-error"]


class CheckResult(TypedDict, total=False):
    """One declared check as the learner sees it (`shown_checks`)."""
    id: str
    title: str
    status: CheckStatus
    passed: bool | None  # None when skipped
    because: str | None  # skipped: the check id whose failure explains this one, or "load"
    message: str
    hint: str
    hints: list[str]  # revealed one by one; the web app sends only those revealed
    line: int | None  # the submission line to mark
    event: int | None  # the recorded event the failure is about (the timeline's marked row)


class Result(TypedDict, total=False):
    """What grading one submission produced (grader/core/schemas/result.json, schema_version 2)."""
    schema_version: int
    exercise: str
    title: str
    passed: bool
    score: float  # the share of all checks that passed
    status: ResultStatus
    checks: list[CheckResult]
    error: dict[str, Any] | None  # {kind, message, line} when the code did not load or run
    device: str | None
    sandbox: str
    duration_s: float
    output: str
    output_truncated: bool
    notes: list[str]  # for the learner
    grader_notes: list[str]  # the sandbox's and the emulation's: the instructor view and the JSON
    seed: int | None
    trace: dict[str, Any] | None
    figures: list[dict[str, Any]]
    problems: list[str]  # for the exercise's author: never in a learner's API response or page


class RunResult(TypedDict):
    """What a Run produced (`run_example`): no verdict, what the function did."""
    exercise: str
    status: RunStatus
    output: str
    output_truncated: bool
    returned: str | None
    returned_truncated: bool
    error: dict[str, Any] | None
    device: str | None
    notes: list[str]
    sandbox: str
    duration_s: float


def upgrade_result(result: dict[str, Any]) -> Result:
    """A stored result in today's shape, for every reader (the one upgrade path): results from before
    schema_version 2 have no per-check status (a load error then marked every check failed, "Not
    checked: ..."), a device "unknown" when none was reached, and the sandbox's and the emulation's notes
    among `notes`; results stored before hint lists have one `hint` per check and no `hints`."""
    if result.get("schema_version") != SCHEMA_VERSION:
        error = result.get("error")
        for check in result.get("checks", []):
            if "status" in check:
                continue
            if error:
                check.update(status="skipped", passed=None, because="load", message="", hint="", line=None)
            else:
                check.update(status="passed" if check["passed"] else "failed", because=None)
        if result.get("device") == "unknown":
            result["device"] = None
        result["grader_notes"] = result.get("grader_notes", []) + result.get("notes", [])
        result["notes"] = []
        result["schema_version"] = SCHEMA_VERSION
    for check in result.get("checks", []):
        if "hints" not in check:
            check["hints"] = [check["hint"]] if check.get("hint") else []
    return cast(Result, result)  # upgraded above: today's shape


def _explain(checks: list[CheckResult], causes: dict[str, list[str]]) -> None:
    """Report "skipped" for each failed check whose failure another failed check explains, naming the
    root cause (a cause that is itself explained gives way to its own cause)."""
    failed = {c["id"]: c for c in checks if c["status"] == "failed"}

    def effective(check_id: str) -> str | None:
        """The failed check that stands for `check_id`: itself, or the root it was already given."""
        check = failed.get(check_id)
        if check is None:
            return None
        return check_id if check["status"] == "failed" else check["because"]

    def root(check_id: str, seen: tuple[str, ...] = ()) -> str | None:
        for candidate in causes.get(check_id, []):
            cause = effective(candidate)
            if cause is None or cause == check_id or cause in seen:
                continue
            return root(cause, (*seen, check_id)) or cause
        return None

    for check_id in list(failed):  # in declared order; a check already skipped explains nothing (cycles)
        cause = root(check_id)
        if cause is not None:
            failed[check_id].update({"status": "skipped", "passed": None, "because": cause, "hint": "", "hints": [],
                                     "line": None, "message": f"Not judged: \"{failed[cause]['title']}\" failed, "
                                                              "and that explains this one."})


def validate_result(result: Result) -> None:
    jsonschemas.validate(result, "result")


SCHEMA_VERSION = 2  # 2: per-check "status" and "because", "grader_notes", a null device


def shown_checks(exercise: Exercise, raw: RawVerdict) -> list[CheckResult]:
    """Each declared check as the learner sees it: passed, failed (with its message and hints) or skipped.

    One mistake, one message: code that did not load or run gives the error alone, every check
    "skipped" because of "load"; a check that failed after a check it names in `after` failed is
    "skipped" because of that one (its own message would only repeat the consequence)."""
    error = raw.error
    checks: list[CheckResult] = []
    causes: dict[str, list[str]] = {}  # failed check -> the checks whose failure may explain it
    for spec in exercise.checks:
        check: CheckResult = {"id": spec.id, "title": spec.title, "status": "passed", "passed": True, "because": None,
                                 "message": "", "hint": "", "hints": [], "line": None}
        got = raw.checks.get(spec.id)
        if error:
            check.update({"status": "skipped", "passed": None, "because": "load"})
        elif got is None or not got["passed"]:
            got = got or {"message": "This check did not run.", "line": None}
            # The check may word the first hint for what it saw; the exercise's further hints follow it.
            first = got["hint"] if isinstance(got.get("hint"), str) else spec.hint
            check.update({"status": "failed", "passed": False, "message": got.get("message") or "",
                          "line": submission_line(got.get("line")), "hint": first, "hints": [first, *spec.hints[1:]],
                          "event": event_index(got.get("event"))})
            cause = as_check_id(got.get("explained_by"))
            causes[spec.id] = [cause] if cause else list(spec.after)
        checks.append(check)
    _explain(checks, causes)
    return checks


def build_result(exercise: Exercise, raw: RawVerdict, sandbox: str, duration_s: float) -> Result:
    """Merge the harness's raw verdict with the exercise's check titles and hints (`shown_checks`)."""
    status = cast(ResultStatus, raw.status.value)  # a grade request's verdict: never "ran"
    error = asdict(raw.error) if raw.error else None
    checks = shown_checks(exercise, raw)
    passed_count = sum(c["status"] == "passed" for c in checks)
    all_passed = status == "passed" and passed_count == len(checks)
    on_cpu = bool(raw.device and not raw.device.startswith("cuda"))  # "cpu (cuda emulated)" on a CPU host
    learner_notes = [exercise.cpu_note] if exercise.cpu_note and on_cpu else []
    result: Result = {
        "schema_version": SCHEMA_VERSION,
        "exercise": exercise.id,
        "title": exercise.title,
        "passed": all_passed,
        # The share of all checks that passed: skipped ones count as not passed, code that did not load 0.
        "score": round(passed_count / len(checks), 4) if checks else 0.0,
        "status": "passed" if all_passed else ("failed" if status == "passed" else status),
        "checks": checks,
        "error": error,
        "device": raw.device,  # None when the code never reached one (it did not load)
        "sandbox": sandbox,
        "duration_s": round(duration_s, 3),
        "output": raw.output,
        "output_truncated": raw.output_truncated,
        "notes": learner_notes,
        "grader_notes": list(raw.notes),  # the sandbox and the emulation: the instructor view and the JSON
        "seed": raw.seed,
    }
    trace, figures, problems = _display(raw)
    result.update({"trace": trace, "figures": figures})
    problems = list(raw.problems) + problems
    if problems:
        result["problems"] = problems
    return result


def _display(raw: RawVerdict) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[str]]:
    """The raw verdict's trace and figures as grader.core.display.conformed keeps them (each checked against
    result.json, together within its cap; what is left out is said for the author)."""
    from grader.core.display import conformed

    return conformed(raw.trace, raw.figures)
