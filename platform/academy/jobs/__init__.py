"""The background jobs, what they share, and how an unfinished one is found or marked failed.

    enqueue(submission_id, key)     grade a stored submission, in its fair key's turn
    enqueue_validation(run_id)      run `grader validate` for one exercise (instructor page)
    enqueue_regrade(run_id)         grade the finished submissions of one exercise again (request_regrade)

Each kind of job (`JobKind`) has one entry in `JOBS` (a `JobType`): the job function, which takes only an
id and reads everything else from the database, so any runner can run it (an in-process thread pool by
default, RQ workers when REDIS_URL is set: academy/runners/); how its unfinished rows are found; how one
ends as the platform's failure; its time limit. A web request only stores the row and returns, never
waits. Every job grades with this process's `GradingSandbox`. `mark_failed` is the one way a row ends as
the platform's failure; `unfinished` is what every runner's recovery starts from.

One concern a module, each importing only those before it:

    kinds.py        JobKind, the fair keys, JobRunner (what academy/runners/ implement), enqueue*
    waiting.py      the verdict the moment it exists: a finished row's news (announce), the long-poll's seats
    rows.py         each kind's unfinished rows (unfinished) and failed ones (mark_failed)
    sandbox.py      this process's GradingSandbox
    grading.py      grade_submission, and the hooks told of a graded verdict (on_graded: LTI's grade passback)
    validation.py   validate_exercise_run, exercise_fingerprint, validate_changed, last_validation_at
    regrade.py      request_regrade, regrade_exercise_run
    registry.py     JOBS: one JobType per JobKind

Other modules import this package (`from academy import jobs`), never one of its modules.
"""
from __future__ import annotations

from flask import Flask

from academy.jobs import waiting
from academy.jobs.grading import grade_submission, on_graded, send_lms_scores
from academy.jobs.kinds import (
    STAFF_KEY,
    UNKEYED,
    JobKind,
    JobRunner,
    UnfinishedJob,
    enqueue,
    enqueue_regrade,
    enqueue_validation,
)
from academy.jobs.registry import JOBS, JobType
from academy.jobs.regrade import REGRADE_STALE_AFTER, regrade_exercise_run, request_regrade, verdict_of
from academy.jobs.rows import mark_failed, unfinished
from academy.jobs.sandbox import GradingSandbox, grading_sandbox
from academy.jobs.validation import exercise_fingerprint, last_validation_at, validate_changed, validate_exercise_run
from academy.jobs.waiting import Finishes, announce, connect, finishes

__all__ = ["JOBS", "REGRADE_STALE_AFTER", "STAFF_KEY", "UNKEYED", "Finishes", "GradingSandbox", "JobKind", "JobRunner",
           "JobType", "UnfinishedJob", "announce", "connect", "enqueue", "enqueue_regrade", "enqueue_validation",
           "exercise_fingerprint", "finishes", "grade_submission", "grading_sandbox", "init_app", "mark_failed",
           "last_validation_at", "on_graded", "regrade_exercise_run", "request_regrade", "send_lms_scores", "shutdown",
           "unfinished", "validate_changed", "validate_exercise_run", "verdict_of"]


def shutdown(app: Flask) -> None:
    """Finish this app's in-process jobs, stop its warm grading processes and its listening for finished rows
    (tests, benchmarks)."""
    app.extensions["academy.jobs"].shutdown()
    grading_sandbox(app).close()
    finishes(app).close()


def init_app(app: Flask) -> None:
    """This process's grading sandbox, made on first use (the runner is academy.runners.init_app's), and its
    news of finished submissions (academy/jobs/waiting.py)."""
    app.extensions["academy.sandbox"] = GradingSandbox(app)
    waiting.init_app(app)
