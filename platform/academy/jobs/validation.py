"""The validation job: `grader validate` for one exercise, for the instructor's page, what it is of
(`exercise_fingerprint`), and the validations the course's changes call for (`validate_changed`)."""
from __future__ import annotations

import hashlib
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from flask import current_app
from sqlalchemy import func, select

from academy.content import get_content
from academy.data.db import get_session
from academy.data.models import (
    PENDING,
    ValidationRun,
    ValidationStatus,
    utcnow,
)

if TYPE_CHECKING:
    from grader.core.exercise import Exercise

from academy.jobs.kinds import JobKind, enqueue_validation
from academy.jobs.rows import mark_failed
from academy.jobs.sandbox import grading_sandbox


def exercise_fingerprint(folder: Path) -> str:
    """A hash of every file name and content in an exercise's folder (what `grader validate` reads: the
    exercise.yaml, solution, mistakes, checks), caches left out: what a validation is of. The course's shared code
    (its `_library`, beside the lessons: courselib, which any exercise's checks may import) is part of every one."""
    digest = hashlib.sha256()
    library = folder.parents[1] / "_library"
    for top, path in [*((folder, p) for p in sorted(folder.rglob("*"))),
                      *((library.parent, p) for p in sorted(library.rglob("*")))]:
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(top).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
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


# Overviews shown at the same moment each read "never validated" before any wrote, and each started the whole
# course (red team 53: eight at once, up to eight validations of every exercise); one process's threads take turns.
_CHANGED_LOCK = threading.Lock()


def validate_changed(exercises: dict[str, Exercise]) -> list[str]:
    """Start a validation, in the background, of every exercise whose files no validation is of: never
    validated, or changed since the last one (its `exercise_fingerprint` differs). The overview calls it, so
    "not run" and "changed since" fill in by themselves. An exercise with a validation queued or running is
    left to it; the new row carries the fingerprint it is for from the start, so one that fails before it reads
    the files is not started again for the same files. Returns the exercises it started."""
    with _CHANGED_LOCK:
        return _validate_changed(exercises)


def _validate_changed(exercises: dict[str, Exercise]) -> list[str]:
    db = get_session()
    last: dict[str, ValidationRun] = {}
    for row in db.scalars(select(ValidationRun).order_by(ValidationRun.id)):
        last[row.exercise_id] = row
    started = []
    for exercise_id, exercise in exercises.items():
        previous = last.get(exercise_id)
        if previous is not None and previous.status in PENDING:
            continue
        fingerprint = exercise_fingerprint(exercise.path)
        if previous is not None and previous.content_hash == fingerprint:
            continue
        run = ValidationRun(exercise_id=exercise_id, content_hash=fingerprint)
        db.add(run)
        db.commit()
        enqueue_validation(run.id)
        started.append(exercise_id)
    return started


def last_validation_at() -> datetime | None:
    """When the latest validation of any exercise finished (UTC), None before the first."""
    return get_session().scalar(select(func.max(ValidationRun.finished_at)))
