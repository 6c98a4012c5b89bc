"""Instructor pages: content with its validate status, content reload, and a dashboard per exercise
with its latest regrade."""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from flask import Blueprint, abort, current_app, flash, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import func, select

from academy import jobs
from academy.content import get_content, reload_content
from academy.db import get_session
from academy.models import PENDING, JobStatus, RegradeRun, Submission, User, ValidationRun
from academy.security import instructor_required
from academy.settings import settings
from grader.course import CourseError
from grader.result import upgrade_result

bp = Blueprint("instructor", __name__, url_prefix="/instructor")

RECENT = 20


@dataclass(frozen=True)
class ExerciseStats:
    attempts: int
    learners: int
    passed_learners: int
    failing_checks: list[tuple[str, str, int]]  # (check id, title, times failed), most frequent first
    recent: list[Submission]

    @property
    def pass_rate(self) -> float:
        return self.passed_learners / self.learners if self.learners else 0.0


def exercise_stats(exercise_id: str) -> ExerciseStats:
    db = get_session()
    where = Submission.exercise_id == exercise_id
    attempts = db.scalar(select(func.count()).select_from(Submission).where(where)) or 0
    learners = db.scalar(select(func.count(Submission.user_id.distinct())).where(where)) or 0
    passed = db.scalar(select(func.count(Submission.user_id.distinct())).where(where, Submission.passed.is_(True)))
    failing: Counter[str] = Counter()
    titles: dict[str, str] = {}
    for (result_json,) in db.execute(select(Submission.result_json).where(where, Submission.status == JobStatus.DONE)):
        # Only checks that really failed: not those skipped because the code did not load or another
        # check's failure explains them (a syntax error is no failure of every check).
        for check in upgrade_result(json.loads(result_json or "{}")).get("checks", []):
            titles[check["id"]] = check["title"]
            if check["status"] == "failed":
                failing[check["id"]] += 1
    recent = db.scalars(select(Submission).where(where).join(User).order_by(Submission.id.desc())
                        .limit(RECENT)).all()
    return ExerciseStats(attempts, learners, passed or 0,
                         [(cid, titles[cid], n) for cid, n in failing.most_common()], list(recent))


def _latest_runs() -> dict[str, ValidationRun]:
    rows = get_session().scalars(select(ValidationRun).order_by(ValidationRun.id)).all()
    return {row.exercise_id: row for row in rows}


@bp.route("/")
@instructor_required
def overview() -> ResponseReturnValue:
    runs = _latest_runs()
    busy = any(r.status in PENDING for r in runs.values())
    return render_template("instructor/overview.html", course=get_content().course, runs=runs, busy=busy,
                           can_reload=settings().content_reload)


@bp.post("/validate/<path:exercise_id>")
@instructor_required
def validate(exercise_id: str) -> ResponseReturnValue:
    content = get_content()
    ids = list(content.course.exercises) if exercise_id == "all" else [exercise_id]
    db = get_session()
    for ex_id in ids:
        if ex_id not in content.course.exercises:
            abort(404, description=f"There is no exercise '{ex_id}'.")
        run = ValidationRun(exercise_id=ex_id)
        db.add(run)
        db.commit()
        jobs.enqueue_validation(run.id)
    flash(f"Validating {len(ids)} exercise(s) in the background; this page refreshes until done.", "info")
    return redirect(url_for("instructor.overview"))


@bp.post("/regrade/<path:exercise_id>")
@instructor_required
def regrade(exercise_id: str) -> ResponseReturnValue:
    if exercise_id not in get_content().course.exercises:
        abort(404, description=f"There is no exercise '{exercise_id}'.")
    run, started = jobs.request_regrade(exercise_id)
    if started:
        flash(f"Regrading {run.total} finished submission(s) in the background; this page refreshes until done.",
              "info")
    else:
        flash(f"A regrade of this exercise is already {run.status} (run {run.id}); it is shown below.", "info")
    return redirect(url_for("instructor.dashboard", exercise_id=exercise_id))


def latest_regrade(exercise_id: str) -> RegradeRun | None:
    return get_session().scalar(select(RegradeRun).where(RegradeRun.exercise_id == exercise_id)
                                .order_by(RegradeRun.id.desc()).limit(1))


@bp.post("/reload")
@instructor_required
def reload() -> ResponseReturnValue:
    if not settings().content_reload:
        abort(403, description="Content reload is switched off (DLA_CONTENT_RELOAD=0); restart to load content.")
    try:
        content = reload_content(current_app)
    except CourseError as exc:
        flash(f"The course files have a problem; the previous content stays live. {exc}", "error")
    else:
        flash(f"Reloaded {len(content.course.lessons)} lesson(s), {len(content.course.exercises)} exercise(s).",
              "info")
    return redirect(url_for("instructor.overview"))


@bp.route("/exercises/<path:exercise_id>")
@instructor_required
def dashboard(exercise_id: str) -> ResponseReturnValue:
    try:
        exercise = get_content().exercise(exercise_id)
    except KeyError:
        abort(404, description=f"There is no exercise '{exercise_id}'.")
    return render_template("instructor/dashboard.html", exercise=exercise, stats=exercise_stats(exercise.id),
                           regrade=latest_regrade(exercise.id))
