"""The grading job: a stored submission graded (or Run) in this process's sandbox, its verdict stored and announced,
and the hooks told of a new graded verdict (`on_graded`: the LTI part's grade passback)."""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Callable

from flask import Flask, current_app

from academy.content import get_content
from academy.data.db import get_session
from academy.data.models import (
    PENDING,
    JobStatus,
    Submission,
    SubmissionKind,
    utcnow,
)
from grader.core.protocol import Status

if TYPE_CHECKING:
    from grader.core.result import Result, RunResult

from academy.jobs import waiting
from academy.jobs.kinds import JobKind
from academy.jobs.rows import mark_failed
from academy.jobs.sandbox import grading_sandbox

log = logging.getLogger("academy.jobs")  # the name it has always logged under


def grade_submission(submission_id: int) -> None:
    """Grade one stored submission and store the verdict, or for a Run what the run did. Every failure ends as
    status "error"."""
    from grader.host.grading import SubmissionError, run_example, run_submission

    db = get_session()
    submission = db.get(Submission, submission_id)
    if submission is None or submission.status not in PENDING:
        return  # already graded (a retried job) or deleted
    submission.status, submission.started_at = JobStatus.RUNNING, utcnow()
    db.commit()
    waiting.announce(submission_id)  # a page waiting on it says "Running" now
    try:
        exercise = get_content().exercise(submission.exercise_id)
        # A Run (kind "run") goes through the same sandbox and protocol, as a request of kind "run".
        answer = run_example if submission.kind == SubmissionKind.RUN else run_submission
        result: Result | RunResult = answer(exercise, submission.code, sandbox=grading_sandbox(current_app))
    except KeyError:
        mark_failed(JobKind.GRADE_SUBMISSION, submission_id,
                    f"The exercise '{submission.exercise_id}' no longer exists.")
        return
    except SubmissionError as exc:
        mark_failed(JobKind.GRADE_SUBMISSION, submission_id, f"This submission cannot be graded: {exc}.")
        return
    except Exception as exc:  # noqa: BLE001 - any other failure is the platform's, and must not lose the row
        log.exception("grading submission %s failed", submission_id)
        mark_failed(JobKind.GRADE_SUBMISSION, submission_id,
                    f"The grader failed ({type(exc).__name__}). Your code is saved; try again later.")
        return
    if result["status"] == Status.INFRA_ERROR.value:  # the sandbox could not grade it: the platform's failure
        message = (result["error"] or {}).get("message", "The grader failed.")  # an infra-error always says why
        mark_failed(JobKind.GRADE_SUBMISSION, submission_id, message, result=result)
        return
    submission.result_json = json.dumps(result)
    submission.passed = bool(result.get("passed"))  # a Run has no verdict: never passed
    submission.status, submission.error_message, submission.finished_at = JobStatus.DONE, None, utcnow()
    db.commit()
    waiting.announce(submission_id)  # a request waiting for it answers now (academy/jobs/waiting.py)
    if submission.kind == SubmissionKind.GRADE:
        send_lms_scores(submission.user_id, submission.exercise_id)


def on_graded(app: Flask, hook: Callable[[int, str], None]) -> None:
    """Have `hook(user_id, exercise_id)` called after a learner's graded verdict is stored or regraded (the LTI
    part's grade passback registers itself here: academy/__init__.py), in the job's app context."""
    app.extensions.setdefault("academy.on_graded", []).append(hook)


def send_lms_scores(user_id: int, exercise_id: str) -> None:
    """Tell the hooks (`on_graded`) of the learner's verdicts on an exercise: the LTI part's sends the best score to
    the LMS line items they launched it from (academy/lti/scores.py), if any. Never fails the job that calls it: a
    platform that refuses keeps the reason on its link, for instructors."""
    for hook in current_app.extensions.get("academy.on_graded", ()):
        try:
            hook(user_id, exercise_id)
        except Exception:  # noqa: BLE001 - the grade is stored; only its copy in the LMS is late
            log.exception("sending the LMS score of %s for user %s failed", exercise_id, user_id)
            get_session().rollback()
