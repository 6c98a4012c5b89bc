"""A job's rows: the unfinished ones of each kind (what every runner's recovery starts from: `unfinished`), and the
one way a row ends as the platform's failure (`mark_failed`)."""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Mapping

from sqlalchemy import select
from sqlalchemy.orm import Session

from academy.data.db import get_session
from academy.data.models import (
    PENDING,
    REGRADE_BUSY,
    JobStatus,
    RegradeRun,
    Submission,
    ValidationRun,
    ValidationStatus,
    utcnow,
)

if TYPE_CHECKING:
    pass

from academy.jobs import waiting
from academy.jobs.kinds import STAFF_KEY, JobKind, UnfinishedJob

log = logging.getLogger("academy.jobs")  # the name it has always logged under


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


def _fail_submission(db: Session, object_id: int, message: str, result: Mapping[str, object] | None) -> Any:
    row = db.get(Submission, object_id)
    if row is None or row.status not in PENDING:
        return None
    row.status, row.error_message, row.passed = JobStatus.ERROR, message, False
    row.result_json = json.dumps(result) if result is not None else None
    return row


def _fail_validation(db: Session, object_id: int, message: str, _result: Mapping[str, object] | None) -> Any:
    row = db.get(ValidationRun, object_id)
    if row is None or row.status not in PENDING:
        return None
    row.status, row.report = ValidationStatus.ERROR, message
    return row


def _fail_regrade(db: Session, object_id: int, message: str, _result: Mapping[str, object] | None) -> Any:
    row = db.get(RegradeRun, object_id)
    if row is None or not row.busy:
        return None
    row.status, row.error_message, row.updated_at = JobStatus.ERROR, message, utcnow()
    return row


def _restart_submission(db: Session, object_id: int) -> None:
    row = db.get(Submission, object_id)
    if row is not None:  # gone since it was found unfinished: nothing to restart
        row.status = JobStatus.QUEUED  # graded from the start again: it is queued


# Each kind's rows, in JOBS's order (registry.py names the same functions there, for the runners).
_UNFINISHED = (_unfinished_submissions, _unfinished_validations, _unfinished_regrades)
_FAIL = {JobKind.GRADE_SUBMISSION: _fail_submission, JobKind.VALIDATE_EXERCISE: _fail_validation,
         JobKind.REGRADE_EXERCISE: _fail_regrade}


def unfinished() -> list[UnfinishedJob]:
    """Every queued or running row, oldest first within each kind (in an app context; the read
    transaction is ended before returning, so callers may take their time)."""
    db = get_session()
    rows = [row for find in _UNFINISHED for row in find(db)]
    db.rollback()
    return rows


def mark_failed(kind: JobKind, object_id: int, message: str, result: Mapping[str, object] | None = None) -> bool:
    """End an unfinished row as the platform's failure ("error") with `message` for the learner or
    instructor (in an app context), and a submission's infra-error `result` when the sandbox gave one.
    False when the row is gone or had finished."""
    db = get_session()
    row = _FAIL[JobKind(kind)](db, object_id, message, result)  # ValueError for a kind that is not one
    if row is None:
        return False
    row.finished_at = utcnow()
    db.commit()
    if kind == JobKind.GRADE_SUBMISSION:
        waiting.announce(object_id)
    log.warning("%s %s finished as error: %s", kind, object_id, message)
    return True
