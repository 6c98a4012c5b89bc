"""The result of grading one submission: the JSON object `grader check --json` prints, the web API
returns and the database stores. One builder, one schema."""
from __future__ import annotations

import json
from dataclasses import asdict
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from grader.course import Exercise
from grader.protocol import RawVerdict


@cache
def _schema(name: str) -> dict[str, Any]:
    return json.loads((Path(__file__).parent / "schemas" / f"{name}.json").read_text())


def validate_result(result: dict[str, Any]) -> None:
    jsonschema.validate(result, _schema("result"))


def build_result(exercise: Exercise, raw: RawVerdict, sandbox: str, duration_s: float) -> dict[str, Any]:
    """Merge the harness's raw verdict with the exercise's check titles and hints."""
    status = raw.status.value
    error = asdict(raw.error) if raw.error else None
    observed = raw.checks
    checks = []
    for spec in exercise.checks:
        got = observed.get(spec.id)
        if got is not None:
            passed, message, line = bool(got["passed"]), got.get("message") or "", got.get("line")
        elif error:
            passed, message, line = False, f"Not checked: {error['message']}", error.get("line")
        else:
            passed, message, line = False, "This check did not run.", None
        checks.append({"id": spec.id, "title": spec.title, "passed": passed,
                       "message": "" if passed else message, "hint": "" if passed else spec.hint,
                       "line": None if passed else line})
    passed_count = sum(c["passed"] for c in checks)
    all_passed = status == "passed" and passed_count == len(checks)
    result = {
        "exercise": exercise.id,
        "title": exercise.title,
        "passed": all_passed,
        "score": round(passed_count / len(checks), 4) if checks else 0.0,
        "status": "passed" if all_passed else ("failed" if status == "passed" else status),
        "checks": checks,
        "error": error,
        "device": raw.device or "unknown",
        "sandbox": sandbox,
        "duration_s": round(duration_s, 3),
        "output": raw.output,
        "output_truncated": raw.output_truncated,
        "notes": list(raw.notes),
        "seed": raw.seed,
    }
    if raw.problems:
        result["problems"] = list(raw.problems)
    return result
