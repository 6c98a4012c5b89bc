"""Background jobs behind one small interface (okpy style).

    enqueue(submission_id)          grade a stored submission
    enqueue_validation(run_id)      run `grader validate` for one exercise (instructor page)

The job functions take only ids and read everything else from the database, so a queue in another
process (RQ, see issue 6) can run them unchanged inside `with create_app().app_context():`. The default
runner is an in-process thread pool: a web request only stores the row and returns, never waits.
With REDIS_URL set, academy/queue.py's RQRunner takes its place (issue 6).
"""
from __future__ import annotations

import json
import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Protocol

from flask import Flask, current_app
from sqlalchemy import select

from academy.content import get_content
from academy.db import get_session
from academy.models import Submission, ValidationRun, utcnow

log = logging.getLogger(__name__)


class JobRunner(Protocol):
    def submit(self, job: Callable[[int], None], object_id: int) -> None:
        """Run `job(object_id)` later, in an app context."""


class ThreadRunner:
    """Jobs on a thread pool inside the web process (the embedded default)."""

    def __init__(self, app: Flask, workers: int):
        self.app = app
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="academy-job")

    def submit(self, job: Callable[[int], None], object_id: int) -> Future:
        return self.pool.submit(self._run, job, object_id)

    def _run(self, job: Callable[[int], None], object_id: int) -> None:
        with self.app.app_context():
            try:
                job(object_id)
            except Exception:  # the job records its own failure; this only keeps the worker thread alive
                log.exception("background job %s(%s) failed", job.__name__, object_id)


def enqueue(submission_id: int) -> None:
    current_app.extensions["academy.jobs"].submit(grade_submission, submission_id)


def enqueue_validation(run_id: int) -> None:
    current_app.extensions["academy.jobs"].submit(validate_exercise_run, run_id)


def grade_submission(submission_id: int) -> None:
    """Grade one stored submission and store the verdict. Every failure ends as status "error"."""
    from grader.grading import SubmissionError, run_submission

    db = get_session()
    submission = db.get(Submission, submission_id)
    if submission is None or submission.status not in ("queued", "running"):
        return  # already graded (a retried job) or deleted
    submission.status, submission.started_at = "running", utcnow()
    db.commit()
    try:
        exercise = get_content().exercise(submission.exercise_id)
        result: dict[str, Any] | None = run_submission(
            exercise, submission.code, sandbox=current_app.config["SANDBOX"],
            hide=[current_app.instance_path])
    except KeyError:
        result, error = None, f"The exercise '{submission.exercise_id}' no longer exists."
    except SubmissionError as exc:
        result, error = None, f"This submission cannot be graded: {exc}."
    except Exception as exc:  # noqa: BLE001 - any other failure is the platform's, and must not lose the row
        log.exception("grading submission %s failed", submission_id)
        result, error = None, f"The grader failed ({type(exc).__name__}). Your code is saved; try again later."
    else:
        error = result["error"]["message"] if result["status"] == "infra-error" else None
    submission.result_json = json.dumps(result) if result is not None else None
    submission.passed = bool(result and result["passed"])
    submission.status = "error" if error else "done"
    submission.error_message = error
    submission.finished_at = utcnow()
    db.commit()


def validate_exercise_run(run_id: int) -> None:
    from grader.validate import validate_exercise

    db = get_session()
    run = db.get(ValidationRun, run_id)
    if run is None:
        return
    run.status = "running"
    db.commit()
    try:
        cases = validate_exercise(get_content().exercise(run.exercise_id), sandbox=current_app.config["SANDBOX"],
                                  jobs=1)
    except Exception as exc:  # noqa: BLE001 - shown to the instructor
        run.status, run.report = "error", f"validate could not run: {exc}"
    else:
        lines = [f"{'ok  ' if c.ok else 'FAIL'} {c.path.name}" + ("" if c.ok else f": {c.explain()}")
                 for c in cases]
        run.status = "ok" if all(c.ok for c in cases) else "failed"
        run.report = "\n".join(lines)
    run.finished_at = utcnow()
    db.commit()


def requeue_unfinished(app: Flask) -> int:
    """Submissions left queued or running by a stopped process go back on the queue."""
    with app.app_context():
        db = get_session()
        pending = db.scalars(select(Submission).where(Submission.status.in_(("queued", "running")))).all()
        for submission in pending:
            submission.status = "queued"
        db.commit()
        for submission in pending:
            enqueue(submission.id)
        return len(pending)


def start_warm_pool(app: Flask, size: int) -> Any:
    """Warm sandbox containers for this process when it grades with docker (None otherwise): a learner
    then waits ~0.5 s for a verdict instead of a container's ~4 s torch start-up."""
    from sandbox import SandboxError, get_sandbox

    if size < 1 or app.config["SANDBOX"] == "local":
        return None
    try:
        if get_sandbox(app.config["SANDBOX"], hide=[app.instance_path]).name != "docker":
            return None
        from sandbox.pool import WarmPool

        return WarmPool(size=size).start()
    except SandboxError as exc:  # grading still works, with cold containers or the local sandbox
        log.warning("no warm sandbox pool: %s", exc)
        return None


def init_app(app: Flask) -> None:
    """Jobs go to RQ when REDIS_URL is configured (academy/queue.py), else to an in-process thread pool.

    With the in-process runner, DLA_WARM_POOL=N (scripts/run sets 2) keeps N warm sandbox containers."""
    runner: JobRunner | None = None
    if app.config.get("REDIS_URL") or os.environ.get("REDIS_URL"):
        from academy.queue import init_queue  # imports rq and redis only when they are wanted

        runner = init_queue(app)
    if runner is None:
        runner = ThreadRunner(app, app.config["GRADING_WORKERS"])
        start_warm_pool(app, app.config["WARM_POOL"])
    app.extensions["academy.jobs"] = runner
