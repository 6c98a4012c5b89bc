"""The validation job: `grader validate` for one exercise, for the instructor's page, and what it is of
(`exercise_fingerprint`)."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from flask import current_app

from academy.content import get_content
from academy.data.db import get_session
from academy.data.models import (
    ValidationRun,
    ValidationStatus,
    utcnow,
)

if TYPE_CHECKING:
    pass

from academy.jobs.kinds import JobKind
from academy.jobs.rows import mark_failed
from academy.jobs.sandbox import grading_sandbox


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
