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
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from flask import Flask, current_app
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from academy import waiting
from academy.content import get_content
from academy.data.db import get_session
from academy.data.models import (
    GRADED,
    PENDING,
    REGRADE_BUSY,
    JobStatus,
    RegradeRun,
    Submission,
    SubmissionKind,
    ValidationRun,
    ValidationStatus,
    utcnow,
)
from academy.settings import Settings, settings
from grader.core.protocol import Request, Status

if TYPE_CHECKING:
    from academy.runners import JobRunner
    from grader.core.course import Exercise
    from grader.core.result import Result
    from grader.host.sandboxes import HarnessSandbox
    from sandbox import Reply

log = logging.getLogger(__name__)


class JobKind(StrEnum):
    """The kinds of background job, by the names runners and the queue know them by (RQ's job arguments in
    Redis carry them: never rename one)."""
    GRADE_SUBMISSION = "grade_submission"
    VALIDATE_EXERCISE = "validate_exercise_run"
    REGRADE_EXERCISE = "regrade_exercise_run"


# The turn of instructors' validation and regrade jobs: one key like one learner's, so they take their
# turn among the learners' jobs, never all the graders and never last.
STAFF_KEY = "staff"
UNKEYED = "unkeyed"  # rows stored before fair keys existed


def enqueue(submission_id: int, key: str | None = None) -> None:
    _runner().submit(JobKind.GRADE_SUBMISSION, submission_id, key or UNKEYED)


def enqueue_validation(run_id: int) -> None:
    _runner().submit(JobKind.VALIDATE_EXERCISE, run_id, STAFF_KEY)


def enqueue_regrade(run_id: int) -> None:
    _runner().submit(JobKind.REGRADE_EXERCISE, run_id, STAFF_KEY)


def _runner() -> JobRunner:
    return current_app.extensions["academy.jobs"]  # set by academy.runners.init_app


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
        result: dict[str, Any] | None = answer(exercise, submission.code, sandbox=grading_sandbox(current_app))
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
    if result["status"] == Status.INFRA_ERROR:  # the sandbox could not grade it: the platform's failure
        mark_failed(JobKind.GRADE_SUBMISSION, submission_id, result["error"]["message"], result=result)
        return
    submission.result_json = json.dumps(result)
    submission.passed = bool(result.get("passed"))  # a Run has no verdict: never passed
    submission.status, submission.error_message, submission.finished_at = JobStatus.DONE, None, utcnow()
    db.commit()
    waiting.announce(submission_id)  # a request waiting for it answers now (academy/waiting.py)
    if submission.kind == SubmissionKind.GRADE:
        send_lms_scores(submission.user_id, submission.exercise_id)


def send_lms_scores(user_id: int, exercise_id: str) -> None:
    """The exercise's best score to the LMS line items this learner launched it from (academy/lti/scores.py), if any.
    Never fails the job that calls it: a platform that refuses keeps the reason on its link, for instructors."""
    from academy.data.models import LtiGradeLink

    db = get_session()
    if db.scalar(select(LtiGradeLink.id).where(LtiGradeLink.user_id == user_id,
                                               LtiGradeLink.exercise_id == exercise_id).limit(1)) is None:
        return
    try:
        from academy import lti

        lti.send_best_score(user_id, exercise_id)
    except Exception:  # noqa: BLE001 - the grade is stored; only its copy in the LMS is late
        log.exception("sending the LMS score of %s for user %s failed", exercise_id, user_id)
        db.rollback()


def exercise_fingerprint(folder: Path) -> str:
    """A hash of every file name and content in an exercise's folder (what `grader validate` reads: the
    exercise.yaml, solution, mistakes, checks), caches left out: what a validation is of."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def validate_exercise_run(run_id: int) -> None:
    from grader.host.validate import validate_exercise

    db = get_session()
    run = db.get(ValidationRun, run_id)
    if run is None:
        return
    run.status = ValidationStatus.RUNNING
    db.commit()
    try:
        exercise = get_content().exercise(run.exercise_id)
        run.content_hash = exercise_fingerprint(exercise.path)  # the files as this run reads them
        cases = validate_exercise(exercise, sandbox=grading_sandbox(current_app), jobs=1)
    except Exception as exc:  # noqa: BLE001 - shown to the instructor
        mark_failed(JobKind.VALIDATE_EXERCISE, run_id, f"validate could not run: {exc}")
        return
    # Per file: the checks it failed (and those reported skipped) next to what it declares, e.g.
    # "ok   raw_backward.py: failed scaled-backward (declared: scaled-backward); ...".
    lines = [f"{'ok  ' if c.ok else 'FAIL'} {c.path.name}: {c.report()}" for c in cases]
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
        Submission.exercise_id == exercise_id, Submission.status == JobStatus.DONE, GRADED)) or 0


def _busy_regrade(exercise_id: str) -> RegradeRun | None:
    db = get_session()
    run = db.scalar(select(RegradeRun).where(RegradeRun.exercise_id == exercise_id,
                                             RegradeRun.status.in_(REGRADE_BUSY)))
    if run is not None and run.updated_at < utcnow() - REGRADE_STALE_AFTER:
        mark_failed(JobKind.REGRADE_EXERCISE, run.id, f"Stopped: no progress for {REGRADE_STALE_AFTER.seconds // 60} "
                    "minutes (the process running it went away). A new regrade took its place.")
        return None
    return run


def verdict_of(result: Result | None) -> dict[str, Any]:
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
        mark_failed(JobKind.REGRADE_EXERCISE, run_id, f"The exercise '{run.exercise_id}' no longer exists.")
        return
    entries = run.entries
    done = {entry["submission"] for entry in entries}
    ids = db.scalars(select(Submission.id).where(
        Submission.exercise_id == run.exercise_id, Submission.status == JobStatus.DONE, GRADED,
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
        mark_failed(JobKind.REGRADE_EXERCISE, run_id, f"The regrade stopped ({type(exc).__name__}: {exc}).")
        return
    run.status, run.finished_at = JobStatus.DONE, utcnow()
    _write_progress(run, entries)
    changed = [entry["submission"] for entry in entries if entry["changed"]]
    for user_id in sorted(set(db.scalars(select(Submission.user_id).where(Submission.id.in_(changed))))):
        send_lms_scores(user_id, run.exercise_id)  # a regrade may change a best score the LMS has


def _regrade_submission(submission: Submission, exercise: Exercise) -> Result:
    """One submission graded again; its new result is stored on it (uncommitted) unless grading failed."""
    from grader.host.grading import SubmissionError, run_submission

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
    if result["status"] == Status.INFRA_ERROR:
        entry["error"] = result["error"]["message"]
        return entry
    entry["new"] = verdict_of(result)
    entry["changed"] = entry["new"] != entry["old"]
    entry["old_result"] = old
    submission.result_json = json.dumps(result)
    submission.passed = bool(result.get("passed"))  # a Run has no verdict: never passed
    return entry


def _write_progress(run: RegradeRun, entries: list[dict[str, Any]]) -> None:
    """Commit the batch: the submissions' new results together with the entries that keep the old ones."""
    run.changes_json = json.dumps(entries)
    run.updated_at = utcnow()
    get_session().commit()


@dataclass(frozen=True)
class UnfinishedJob:
    """A row some job has still to finish: its job kind, id, fair key and when it was made."""
    kind: JobKind
    object_id: int
    key: str
    created_at: datetime


def _unfinished_submissions(db: Session) -> list[UnfinishedJob]:
    return [UnfinishedJob(JobKind.GRADE_SUBMISSION, row_id, key or f"user-{user_id}", created)
            for row_id, key, user_id, created in db.execute(
                select(Submission.id, Submission.fair_key, Submission.user_id, Submission.created_at)
                .where(Submission.status.in_(PENDING)).order_by(Submission.id))]


def _unfinished_validations(db: Session) -> list[UnfinishedJob]:
    return [UnfinishedJob(JobKind.VALIDATE_EXERCISE, row_id, STAFF_KEY, created) for row_id, created in db.execute(
        select(ValidationRun.id, ValidationRun.created_at).where(
            ValidationRun.status.in_(PENDING)).order_by(ValidationRun.id))]


def _unfinished_regrades(db: Session) -> list[UnfinishedJob]:
    return [UnfinishedJob(JobKind.REGRADE_EXERCISE, row_id, STAFF_KEY, created) for row_id, created in db.execute(
        select(RegradeRun.id, RegradeRun.created_at).where(
            RegradeRun.status.in_(REGRADE_BUSY)).order_by(RegradeRun.id))]


def _fail_submission(db: Session, object_id: int, message: str, result: dict[str, Any] | None) -> Any:
    row = db.get(Submission, object_id)
    if row is None or row.status not in PENDING:
        return None
    row.status, row.error_message, row.passed = JobStatus.ERROR, message, False
    row.result_json = json.dumps(result) if result is not None else None
    return row


def _fail_validation(db: Session, object_id: int, message: str, _result: dict[str, Any] | None) -> Any:
    row = db.get(ValidationRun, object_id)
    if row is None or row.status not in PENDING:
        return None
    row.status, row.report = ValidationStatus.ERROR, message
    return row


def _fail_regrade(db: Session, object_id: int, message: str, _result: dict[str, Any] | None) -> Any:
    row = db.get(RegradeRun, object_id)
    if row is None or not row.busy:
        return None
    row.status, row.error_message, row.updated_at = JobStatus.ERROR, message, utcnow()
    return row


def _restart_submission(db: Session, object_id: int) -> None:
    db.get(Submission, object_id).status = JobStatus.QUEUED  # graded from the start again: it is queued


@dataclass(frozen=True)
class JobType:
    """One kind of job, everything a runner needs to know of it."""
    kind: JobKind
    run: Callable[[int], None]  # the job itself: the row's id in, everything else from the database
    unfinished: Callable[[Session], list[UnfinishedJob]]  # its queued or running rows, oldest first
    fail: Callable[[Session, int, str, dict[str, Any] | None], Any]  # end a row as "error": the row, or None
    timeout: Callable[[Settings], int]  # seconds the job may run (RQ stops it after that)
    id_prefix: str  # of its RQ job ids: "submission-12"
    # Before a runner that grades in this process runs a lost job again (threads.py): the row as it then is.
    restart: Callable[[Session, int], None] = lambda _db, _object_id: None


JOBS: dict[JobKind, JobType] = {job.kind: job for job in (
    JobType(JobKind.GRADE_SUBMISSION, grade_submission, _unfinished_submissions, _fail_submission,
            lambda own: own.job_timeout, "submission", restart=_restart_submission),
    JobType(JobKind.VALIDATE_EXERCISE, validate_exercise_run, _unfinished_validations, _fail_validation,
            lambda own: own.job_timeout, "validation"),
    JobType(JobKind.REGRADE_EXERCISE, regrade_exercise_run, _unfinished_regrades, _fail_regrade,
            lambda own: own.regrade_timeout, "regrade"),
)}


def unfinished() -> list[UnfinishedJob]:
    """Every queued or running row, oldest first within each kind (in an app context; the read
    transaction is ended before returning, so callers may take their time)."""
    db = get_session()
    rows = [row for job in JOBS.values() for row in job.unfinished(db)]
    db.rollback()
    return rows


def mark_failed(kind: JobKind, object_id: int, message: str, result: dict[str, Any] | None = None) -> bool:
    """End an unfinished row as the platform's failure ("error") with `message` for the learner or
    instructor (in an app context), and a submission's infra-error `result` when the sandbox gave one.
    False when the row is gone or had finished."""
    db = get_session()
    row = JOBS[JobKind(kind)].fail(db, object_id, message, result)  # ValueError for a kind that is not one
    if row is None:
        return False
    row.finished_at = utcnow()
    db.commit()
    if kind == JobKind.GRADE_SUBMISSION:
        waiting.announce(object_id)
    log.warning("%s %s finished as error: %s", kind, object_id, message)
    return True


class GradingSandbox:
    """This process's sandbox, made on first use and kept, with its warm pool of single-use grading
    processes (DLA_WARM_POOL, default 2; 0 = a cold process per submission; `warm` overrides it): a learner
    then waits a fraction of a second for a verdict instead of a torch start-up. It grades like the
    grader's `HarnessSandbox` (grader/host/sandboxes.py) for `run_submission`: a sandbox that cannot be
    made is that submission's infra-error."""

    def __init__(self, app: Flask, warm: int | None = None):
        self.app = app
        self.warm = settings(app).warm_pool if warm is None else warm
        self._sandbox: HarnessSandbox | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._sandbox.name if self._sandbox is not None else settings(self.app).sandbox

    def available(self) -> tuple[bool, str]:
        from sandbox import SandboxError

        try:
            self.get()
        except SandboxError as exc:
            return False, str(exc)
        return True, ""

    def require(self) -> None:
        self.get()

    def grade(self, exercise: Exercise, request: Request) -> Reply:
        return self.get().grade(exercise, request)

    def get(self) -> HarnessSandbox:
        from grader.host.sandboxes import SERVICE_SANDBOXES, get_sandbox, names
        from sandbox import SandboxError

        with self._lock:
            if self._sandbox is None:
                name, hide, warm = settings(self.app).sandbox, [Path(self.app.instance_path)], self.warm
                course = Path(settings(self.app).exercises_dir)  # the course the app serves, one source
                if name in names() and name not in SERVICE_SANDBOXES:  # "unconfined": other people's code
                    raise SandboxError(f"DLA_SANDBOX={name!r} is never used by the web app or the worker: "
                                       f"they grade with one of {', '.join(SERVICE_SANDBOXES)}")
                try:
                    sandbox = get_sandbox(name, course_root=course, hide=hide, warm=warm)
                except SandboxError as exc:
                    if warm < 1:
                        raise
                    # Grading still works, a cold process per submission: slower, and the log says why.
                    log.warning("no warm sandbox pool: %s", exc)
                    sandbox = get_sandbox(name, course_root=course, hide=hide)
                sandbox.require()  # a sandbox that cannot confine here is refused before any submission
                self._sandbox = sandbox
            return self._sandbox

    def stale_image_note(self) -> str | None:
        """What an instructor must know when the course on disk no longer matches the grader image."""
        from grader.host.image import content_fingerprint
        from grader.host.sandboxes import grader_image
        from sandbox.docker import STALE_IMAGE_FIX, stale_image

        if settings(self.app).sandbox not in ("auto", "docker"):
            return None
        image = grader_image()
        if not stale_image(image, content_fingerprint(course_root=Path(settings(self.app).exercises_dir))):
            return None
        if self._sandbox is not None and self._sandbox.name == "docker":
            return (f"The course or grader files changed since the grader image {image} was built: learners are "
                    f"still graded with the image's copy of the checks, and Validate runs that copy too. To grade "
                    f"with the files on disk, {STALE_IMAGE_FIX}.")
        return (f"The course or grader files changed since the grader image {image} was built, so Docker is not "
                f"used: learners are graded by the local sandbox, which takes seconds longer per verdict. "
                f"To use Docker again, {STALE_IMAGE_FIX}.")

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
    app.extensions["academy.jobs"].shutdown()
    grading_sandbox(app).close()


def init_app(app: Flask) -> None:
    """This process's grading sandbox, made on first use (the runner is academy.runners.init_app's), and its
    news of finished submissions (academy/waiting.py)."""
    app.extensions["academy.sandbox"] = GradingSandbox(app)
    waiting.init_app(app)
