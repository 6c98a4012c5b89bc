"""The regrade job: every finished submission of one exercise graded again, old and new verdicts kept side by side."""
from __future__ import annotations

import json
import logging
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Mapping

from flask import current_app
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from academy.content import get_content
from academy.data.db import get_session
from academy.data.models import (
    GRADED,
    REGRADE_BUSY,
    JobStatus,
    RegradeRun,
    Submission,
    utcnow,
)
from grader.core.protocol import Status

if TYPE_CHECKING:
    from grader.core.course import Exercise

from academy.jobs.grading import send_lms_scores
from academy.jobs.kinds import JobKind, enqueue_regrade
from academy.jobs.rows import mark_failed
from academy.jobs.sandbox import grading_sandbox

log = logging.getLogger("academy.jobs")  # the name it has always logged under


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


def verdict_of(result: Mapping[str, Any] | None) -> dict[str, Any]:
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
            submission = db.get(Submission, submission_id)
            if submission is None:  # deleted since the list was read: nothing to regrade
                continue
            entry = _regrade_submission(submission, exercise)
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


def _regrade_submission(submission: Submission, exercise: Exercise) -> dict[str, Any]:
    """One submission graded again, as the run's entry for it; its new result is stored on it (uncommitted) unless
    grading failed."""
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
    if result["status"] == Status.INFRA_ERROR.value:
        entry["error"] = (result["error"] or {}).get("message", "The grader failed.")  # an infra-error says why
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
