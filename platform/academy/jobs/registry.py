"""Every kind of job, everything a runner needs to know of it: `JOBS`, one `JobType` per `JobKind`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from sqlalchemy.orm import Session

from academy.settings import Settings

if TYPE_CHECKING:
    pass

from academy.jobs.grading import grade_submission
from academy.jobs.kinds import JobKind, UnfinishedJob
from academy.jobs.regrade import regrade_exercise_run
from academy.jobs.rows import (
    _fail_regrade,
    _fail_submission,
    _fail_validation,
    _restart_submission,
    _unfinished_regrades,
    _unfinished_submissions,
    _unfinished_validations,
)
from academy.jobs.validation import validate_exercise_run


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
