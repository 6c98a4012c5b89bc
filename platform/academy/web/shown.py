"""What a learner is shown of a stored submission and its result (the API's and the tutor's one filter):
`learner_result`, `learner_error`, `submission_json`, `hints_on_request`."""
from __future__ import annotations

import json
from typing import Any

from flask import g
from sqlalchemy import select

from academy.data.db import get_session
from academy.data.models import HintReveal, Submission
from grader.core.protocol import Status
from grader.core.result import Result

# What of a stored result a learner is shown: the verdict and what their code did. The rest is for instructors
# (and `grader check --json`): `problems` (what the exercise's author must fix, naming hidden tests and quoting
# exception text), `grader_notes` (the sandbox's and the emulation's) and the `seed`. Lists of what is shown,
# not of what is hidden, so a field the grader adds later stays with instructors until it is put here.
LEARNER_RESULT = ("schema_version", "exercise", "title", "passed", "score", "status", "checks", "error", "device",
                  "sandbox", "duration_s", "output", "output_truncated", "notes", "trace", "figures")
LEARNER_CHECK = ("id", "title", "status", "passed", "because", "message", "hint", "hints", "hints_total", "line",
                 "event")
LEARNER_RUN = ("exercise", "status", "output", "output_truncated", "returned", "returned_truncated", "error",
               "device", "notes", "sandbox", "duration_s")
# The platform's own failure, as a learner reads it; what went wrong stays in the stored result for instructors.
GRADER_FAILED = "The grader failed; your code is saved. Try again later."


def for_learners() -> bool:
    """Whether this request's user sees the learner's view of results (everyone but instructors)."""
    return not g.user.is_instructor


def learner_result(result: Result) -> dict[str, Any]:
    shown = {key: result[key] for key in LEARNER_RESULT if key in result}
    shown["checks"] = [{key: check[key] for key in LEARNER_CHECK if key in check} for check in result.get("checks", [])]
    if result.get("status") == Status.INFRA_ERROR:
        shown["error"] = {"kind": "infra", "message": GRADER_FAILED, "line": None}
    return shown


def learner_error(row: Submission) -> str | None:
    """A failed row's `error` as a learner reads it: the sandbox's own words stay with instructors."""
    stored = json.loads(row.result_json) if row.result_json else {}
    return GRADER_FAILED if stored.get("status") == Status.INFRA_ERROR else row.error_message


def submission_json(submission: Submission, *, code: bool = False) -> dict[str, Any]:
    """A submission as the API returns it. To its learner, hints come only as far as revealed (hints_on_request)
    and the result as learners see it (learner_result); an instructor sees everything."""
    result = submission.result
    error = submission.error_message
    if result is not None and submission.user_id == g.user.id:
        result = hints_on_request(submission, result)
    if for_learners():
        result = learner_result(result) if result is not None else None
        error = learner_error(submission)
    data = {"id": submission.id, "exercise": submission.exercise_id, "status": submission.status,
            "created_at": submission.created_at.isoformat() + "Z",
            "started_at": submission.started_at.isoformat() + "Z" if submission.started_at else None,
            "finished_at": submission.finished_at.isoformat() + "Z" if submission.finished_at else None,
            "error": error, "result": result}
    if code:
        data["code"] = submission.code
    return data


def hints_on_request(submission: Submission, result: Result) -> Result:
    """The result with each failed check's hints cut to those the learner revealed (`hints`), and how many
    there are (`hints_total`): an unrevealed hint never reaches the browser."""
    revealed: dict[str, int] = {}
    for check_id, number in get_session().execute(select(HintReveal.check_id, HintReveal.number).where(
            HintReveal.submission_id == submission.id)).all():
        revealed[check_id] = max(revealed.get(check_id, 0), number)
    for check in result.get("checks", []):
        hints = list(check.get("hints") or [])  # every stored result has them (upgrade_result)
        check["hints"], check["hints_total"], check["hint"] = hints[:revealed.get(check["id"], 0)], len(hints), ""
    return result
