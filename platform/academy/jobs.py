"""Background jobs behind one small interface (okpy style).

    enqueue(submission_id, key)     grade a stored submission, in its fair key's turn
    enqueue_validation(run_id)      run `grader validate` for one exercise (instructor page)
    enqueue_regrade(run_id)         grade the finished submissions of one exercise again (request_regrade)

The job functions take only ids and read everything else from the database, so a queue in another
process (RQ, see issue 6) can run them unchanged inside `with create_app().app_context():`. The default
runner is an in-process thread pool: a web request only stores the row and returns, never waits.
Both runners take jobs in turns per fair key (ThreadRunner below; RQRunner in academy/queue.py).
With REDIS_URL set, academy/queue.py's RQRunner takes its place (issue 6).
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Protocol

from flask import Flask, current_app
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from academy.content import get_content
from academy.db import get_session
from academy.models import (
    PENDING,
    REGRADE_BUSY,
    JobStatus,
    RegradeRun,
    Submission,
    ValidationRun,
    ValidationStatus,
    utcnow,
)
from grader.protocol import Status

log = logging.getLogger(__name__)


# The turn of instructors' validation and regrade jobs: one key like one learner's, so they take their
# turn among the learners' jobs, never all the graders and never last.
STAFF_KEY = "staff"
UNKEYED = "unkeyed"  # rows stored before fair keys existed


class JobRunner(Protocol):
    def submit(self, job: Callable[[int], None], object_id: int, key: str = UNKEYED) -> None:
        """Run `job(object_id)` later, in an app context, in `key`'s turn (fair scheduling)."""


class ThreadRunner:
    """Jobs on threads inside the web process (the embedded default), taken in turns.

    Each key (an account, the guests of one client address, the instructors' jobs) has at most one job
    running; keys with waiting jobs take turns in a line, and a key whose job finished goes to the back
    of the line. One client flooding the queue then waits behind its own jobs and holds at most one
    grader, while everyone else's next job starts within one turn.
    """

    def __init__(self, app: Flask, workers: int):
        self.app = app
        self.workers = workers
        self._cond = threading.Condition()
        self._waiting: dict[str, deque[tuple[Callable[[int], None], int]]] = {}
        self._line: deque[str] = deque()  # keys with a waiting job and none running, in turn order
        self._running: set[str] = set()
        self._threads: list[threading.Thread] = []  # started on first use: the factory starts nothing
        self._busy = 0
        self._stopping = False

    def submit(self, job: Callable[[int], None], object_id: int, key: str = UNKEYED) -> None:
        with self._cond:
            if self._stopping:
                raise RuntimeError("the job runner is shut down")
            self._waiting.setdefault(key, deque()).append((job, object_id))
            if key not in self._running and key not in self._line:
                self._line.append(key)
            if not self._threads:
                for number in range(self.workers):
                    thread = threading.Thread(target=self._work, name=f"academy-job-{number}", daemon=True)
                    thread.start()
                    self._threads.append(thread)
            self._cond.notify()

    def _next(self) -> tuple[str, Callable[[int], None], int] | None:
        with self._cond:
            while not self._line:
                if self._stopping and not self._busy:
                    self._cond.notify_all()
                    return None
                self._cond.wait()
            key = self._line.popleft()
            job, object_id = self._waiting[key].popleft()
            self._running.add(key)
            self._busy += 1
            return key, job, object_id

    def _done(self, key: str) -> None:
        with self._cond:
            self._running.discard(key)
            self._busy -= 1
            if self._waiting.get(key):
                self._line.append(key)  # its next job goes to the back of the line
            else:
                self._waiting.pop(key, None)
            self._cond.notify_all()

    def _work(self) -> None:
        while (picked := self._next()) is not None:
            key, job, object_id = picked
            try:
                with self.app.app_context():
                    job(object_id)
            except Exception:  # the job records its own failure; this only keeps the worker thread alive
                log.exception("background job %s(%s) failed", job.__name__, object_id)
            finally:
                self._done(key)

    def shutdown(self) -> None:
        """Run every job submitted so far, then stop the threads."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()


def enqueue(submission_id: int, key: str | None = None) -> None:
    current_app.extensions["academy.jobs"].submit(grade_submission, submission_id, key or UNKEYED)


def enqueue_validation(run_id: int) -> None:
    current_app.extensions["academy.jobs"].submit(validate_exercise_run, run_id, STAFF_KEY)


def enqueue_regrade(run_id: int) -> None:
    current_app.extensions["academy.jobs"].submit(regrade_exercise_run, run_id, STAFF_KEY)


def grade_submission(submission_id: int) -> None:
    """Grade one stored submission and store the verdict. Every failure ends as status "error"."""
    from grader.grading import SubmissionError, run_submission

    db = get_session()
    submission = db.get(Submission, submission_id)
    if submission is None or submission.status not in PENDING:
        return  # already graded (a retried job) or deleted
    submission.status, submission.started_at = JobStatus.RUNNING, utcnow()
    db.commit()
    try:
        exercise = get_content().exercise(submission.exercise_id)
        result: dict[str, Any] | None = run_submission(exercise, submission.code,
                                                       sandbox=grading_sandbox(current_app))
    except KeyError:
        result, error = None, f"The exercise '{submission.exercise_id}' no longer exists."
    except SubmissionError as exc:
        result, error = None, f"This submission cannot be graded: {exc}."
    except Exception as exc:  # noqa: BLE001 - any other failure is the platform's, and must not lose the row
        log.exception("grading submission %s failed", submission_id)
        result, error = None, f"The grader failed ({type(exc).__name__}). Your code is saved; try again later."
    else:
        error = result["error"]["message"] if result["status"] == Status.INFRA_ERROR else None
    submission.result_json = json.dumps(result) if result is not None else None
    submission.passed = bool(result and result["passed"])
    submission.status = JobStatus.ERROR if error else JobStatus.DONE
    submission.error_message = error
    submission.finished_at = utcnow()
    db.commit()


def validate_exercise_run(run_id: int) -> None:
    from grader.validate import validate_exercise

    db = get_session()
    run = db.get(ValidationRun, run_id)
    if run is None:
        return
    run.status = ValidationStatus.RUNNING
    db.commit()
    try:
        cases = validate_exercise(get_content().exercise(run.exercise_id),
                                  sandbox=grading_sandbox(current_app), jobs=1)
    except Exception as exc:  # noqa: BLE001 - shown to the instructor
        run.status, run.report = ValidationStatus.ERROR, f"validate could not run: {exc}"
    else:
        lines = [f"{'ok  ' if c.ok else 'FAIL'} {c.path.name}" + ("" if c.ok else f": {c.explain()}")
                 for c in cases]
        run.status = ValidationStatus.OK if all(c.ok for c in cases) else ValidationStatus.FAILED
        run.report = "\n".join(lines)
    run.finished_at = utcnow()
    db.commit()


# A queued or running regrade that has not moved for this long lost its process (a restart, a killed
# worker): the next request for that exercise ends it as "error" and starts afresh instead of waiting forever.
REGRADE_STALE_AFTER = timedelta(minutes=15)
REGRADE_COMMIT_EVERY_S = 2.0  # progress is written this often: each write rewrites the run's whole list


def request_regrade(exercise_id: str) -> tuple[RegradeRun, bool]:
    """Start regrading the finished submissions of one (existing) exercise, in the background.

    Returns (run, True) for a new run, or (the run already queued or running, False): one exercise is
    never regraded twice at once (the database's one-busy-run index settles two requests racing).
    """
    db = get_session()
    busy = _busy_regrade(exercise_id)
    if busy is not None:
        return busy, False
    run = RegradeRun(exercise_id=exercise_id, total=_finished_count(exercise_id))
    db.add(run)
    try:
        db.commit()
    except IntegrityError:
        db.rollback()
        busy = _busy_regrade(exercise_id)
        if busy is None:
            raise
        return busy, False
    enqueue_regrade(run.id)
    return run, True


def _finished_count(exercise_id: str) -> int:
    return get_session().scalar(select(func.count()).select_from(Submission).where(
        Submission.exercise_id == exercise_id, Submission.status == JobStatus.DONE)) or 0


def _busy_regrade(exercise_id: str) -> RegradeRun | None:
    db = get_session()
    run = db.scalar(select(RegradeRun).where(RegradeRun.exercise_id == exercise_id,
                                             RegradeRun.status.in_(REGRADE_BUSY)))
    if run is not None and run.updated_at < utcnow() - REGRADE_STALE_AFTER:
        run.status, run.finished_at = JobStatus.ERROR, utcnow()
        run.error_message = (f"Stopped: no progress for {REGRADE_STALE_AFTER.seconds // 60} minutes "
                             "(the process running it went away). A new regrade took its place.")
        db.commit()
        return None
    return run


def verdict_of(result: dict[str, Any] | None) -> dict[str, Any]:
    """What a regrade compares: the status, the passed flag and the score (rounded as results store it)."""
    if result is None:
        return {"status": "none", "passed": False, "score": 0.0}
    return {"status": result["status"], "passed": bool(result["passed"]), "score": round(float(result["score"]), 4)}


def regrade_exercise_run(run_id: int) -> None:
    """Grade every finished submission of the run's exercise again and store the new verdicts.

    Submissions stored before the request with status "done" are graded with the same `run_submission`
    call and sandbox as `grade_submission`. Each gets an entry in the run's list: its old and new verdict,
    whether the verdict changed, and the result it replaced (nothing is lost). A submission that cannot be
    graded now keeps its verdict and counts as failed. A retried job (RQ) resumes after the entries it
    already stored.
    """
    db = get_session()
    run = db.get(RegradeRun, run_id)
    if run is None or not run.busy:
        return  # finished, or ended as stale and replaced
    try:
        exercise = get_content().exercise(run.exercise_id)
    except KeyError:
        _end_regrade(run, JobStatus.ERROR, f"The exercise '{run.exercise_id}' no longer exists.")
        return
    entries = run.entries
    done = {entry["submission"] for entry in entries}
    ids = db.scalars(select(Submission.id).where(
        Submission.exercise_id == run.exercise_id, Submission.status == JobStatus.DONE,
        Submission.created_at <= run.created_at).order_by(Submission.id)).all()
    run.status, run.started_at, run.updated_at = JobStatus.RUNNING, run.started_at or utcnow(), utcnow()
    run.total = len(done | set(ids))
    db.commit()
    try:
        last_write = time.monotonic()
        for submission_id in ids:
            if submission_id in done:
                continue
            entry = _regrade_submission(db.get(Submission, submission_id), exercise)
            entries.append(entry)
            run.regraded += 1
            run.failed += int(entry["error"] is not None)
            run.changed += int(entry["changed"])
            if time.monotonic() - last_write >= REGRADE_COMMIT_EVERY_S:
                _write_progress(run, entries)
                last_write = time.monotonic()
        _write_progress(run, entries)
    except Exception as exc:  # noqa: BLE001 - e.g. the database went away; shown to the instructor
        log.exception("regrade run %s failed", run_id)
        db.rollback()  # the unwritten batch goes back: its submissions keep their old verdicts
        _end_regrade(db.get(RegradeRun, run_id), JobStatus.ERROR, f"The regrade stopped ({type(exc).__name__}: {exc}).")
        return
    _end_regrade(run, JobStatus.DONE)


def _regrade_submission(submission: Submission, exercise: Any) -> dict[str, Any]:
    """One submission graded again; its new result is stored on it (uncommitted) unless grading failed."""
    from grader.grading import SubmissionError, run_submission

    old = submission.result
    entry: dict[str, Any] = {"submission": submission.id, "learner": submission.user.display_name,
                             "old": verdict_of(old), "new": None, "changed": False, "error": None,
                             "old_result": None}
    # The stored run's seed: the same random scenario again, so a changed verdict comes from the changed
    # checks and not from a different draw.
    seed = old.get("seed") if old and isinstance(old.get("seed"), int) else None
    try:
        result = run_submission(exercise, submission.code, sandbox=grading_sandbox(current_app), seed=seed)
    except SubmissionError as exc:
        entry["error"] = f"This submission cannot be graded: {exc}."
        return entry
    except Exception as exc:  # noqa: BLE001 - the platform's failure; this submission keeps its verdict
        log.exception("regrading submission %s failed", submission.id)
        entry["error"] = f"The grader failed ({type(exc).__name__})."
        return entry
    if result["status"] == "infra-error":
        entry["error"] = result["error"]["message"]
        return entry
    entry["new"] = verdict_of(result)
    entry["changed"] = entry["new"] != entry["old"]
    entry["old_result"] = old
    submission.result_json = json.dumps(result)
    submission.passed = bool(result["passed"])
    return entry


def _write_progress(run: RegradeRun, entries: list[dict[str, Any]]) -> None:
    """Commit the batch: the submissions' new results together with the entries that keep the old ones."""
    run.changes_json = json.dumps(entries)
    run.updated_at = utcnow()
    get_session().commit()


def _end_regrade(run: RegradeRun, status: JobStatus, error: str | None = None) -> None:
    run.status, run.error_message = status, error
    run.finished_at = run.updated_at = utcnow()
    get_session().commit()


def requeue_unfinished(app: Flask) -> int:
    """Submissions left queued or running by a stopped process go back on the queue."""
    with app.app_context():
        db = get_session()
        pending = db.scalars(select(Submission).where(Submission.status.in_(PENDING))).all()
        for submission in pending:
            submission.status = JobStatus.QUEUED
        db.commit()
        for submission in pending:
            enqueue(submission.id, submission.fair_key or f"user-{submission.user_id}")
        return len(pending)


class GradingSandbox:
    """This process's sandbox, made on first use and kept, with its warm pool of single-use grading
    processes (DLA_WARM_POOL, default 2; 0 = a cold process per submission): a learner then waits a
    fraction of a second for a verdict instead of a torch start-up. It is itself a sandbox for
    `run_submission`: a sandbox that cannot be made is that submission's infra-error."""

    def __init__(self, app: Flask):
        self.app = app
        self._sandbox: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._sandbox.name if self._sandbox is not None else self.app.config["SANDBOX"]

    def run(self, exercise: Any, request: Any) -> Any:
        return self.get().run(exercise, request)

    def get(self) -> Any:
        from sandbox import SERVICE_SANDBOXES, SandboxError, get_sandbox, names

        with self._lock:
            if self._sandbox is None:
                name, hide, warm = self.app.config["SANDBOX"], [Path(self.app.instance_path)], \
                    int(self.app.config["WARM_POOL"])
                if name in names() and name not in SERVICE_SANDBOXES:  # "unconfined": other people's code
                    raise SandboxError(f"DLA_SANDBOX={name!r} is never used by the web app or the worker: "
                                       f"they grade with one of {', '.join(SERVICE_SANDBOXES)}")
                try:
                    sandbox = get_sandbox(name, hide=hide, warm=warm)
                except SandboxError as exc:
                    if warm < 1:
                        raise
                    # Grading still works, a cold process per submission: slower, and the log says why.
                    log.warning("no warm sandbox pool: %s", exc)
                    sandbox = get_sandbox(name, hide=hide)
                sandbox.require()  # a sandbox that cannot confine here is refused before any submission
                self._sandbox = sandbox
            return self._sandbox

    def describe(self) -> str:
        sandbox = self.get()
        pool = getattr(sandbox, "pool", None)
        return f"{sandbox.name} (warm pool of {pool.size})" if pool is not None else f"{sandbox.name} (cold)"

    def close(self) -> None:
        with self._lock:
            if self._sandbox is not None:
                self._sandbox.close()
                self._sandbox = None


def grading_sandbox(app: Flask) -> GradingSandbox:
    return app.extensions["academy.sandbox"]


def shutdown(app: Flask) -> None:
    """Finish this app's in-process jobs and stop its warm grading processes (tests, benchmarks)."""
    runner = app.extensions["academy.jobs"]
    if isinstance(runner, ThreadRunner):
        runner.shutdown()
    grading_sandbox(app).close()


def init_app(app: Flask) -> None:
    """Jobs go to RQ when REDIS_URL is configured (academy/queue.py), else to an in-process thread pool.
    Whoever runs the jobs grades with this app's `grading_sandbox`, made on first use."""
    app.extensions["academy.sandbox"] = GradingSandbox(app)
    runner: JobRunner | None = None
    if app.config.get("REDIS_URL") or os.environ.get("REDIS_URL"):
        from academy.queue import init_queue  # imports rq and redis only when they are wanted

        runner = init_queue(app)
    if runner is None:
        runner = ThreadRunner(app, app.config["GRADING_WORKERS"])
    app.extensions["academy.jobs"] = runner
