"""The JSON API (docs/openapi.yaml): submissions, drafts, progress. Session cookie + CSRF header, or Bearer."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, g, jsonify, request, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from academy import jobs, progress
from academy.content import get_content
from academy.db import get_session
from academy.limits import account_key, client_address, limit, limiter
from academy.models import PENDING, Draft, JobStatus, Submission
from academy.security import login_required
from academy.settings import settings
from grader.course import Exercise
from grader.grading import MAX_CODE_BYTES

bp = Blueprint("api", __name__, url_prefix="/api")


def submission_json(submission: Submission) -> dict[str, Any]:
    return {"id": submission.id, "exercise": submission.exercise_id, "status": submission.status,
            "created_at": submission.created_at.isoformat() + "Z",
            "started_at": submission.started_at.isoformat() + "Z" if submission.started_at else None,
            "finished_at": submission.finished_at.isoformat() + "Z" if submission.finished_at else None,
            "error": submission.error_message, "result": submission.result}


def _json_body() -> dict[str, Any]:
    data = request.get_json()  # a body that is not JSON, or hostile JSON, answers 400 (academy/inputs.py)
    if not isinstance(data, dict):
        abort(400, description='Send a JSON object, e.g. {"exercise": "...", "code": "..."}.')
    return data


def _code_field(data: dict[str, Any]) -> str:
    code = data.get("code")
    if not isinstance(code, str):
        abort(400, description='"code" must be a string of Python source.')
    if len(code.encode("utf-8")) > MAX_CODE_BYTES:
        abort(413, description=f"The code is larger than {MAX_CODE_BYTES // 1024} KB.")
    if "\x00" in code:
        abort(400, description="The code contains a NUL character; send Python source text.")
    return code


def _exercise_or_404(exercise_id: Any) -> Exercise:
    if not isinstance(exercise_id, str):
        abort(400, description='"exercise" must be an exercise id such as "mixed-precision/amp-step".')
    try:
        return get_content().exercise(exercise_id)
    except KeyError:
        abort(404, description=f"There is no exercise '{exercise_id}'.")


def _submission_limit() -> str:
    count, window_s = settings().submission_rate
    return f"{count} per {window_s} seconds"


def _submission_limit_message() -> str:
    count, window_s = settings().submission_rate
    return f"Too many submissions: at most {count} per {window_s} s."


def fair_key() -> str:
    """Whose turn a submission takes in the grading line (academy/fairness.py): each account its own;
    guests by client address, so guests minted in bulk from one client share a single turn."""
    return f"guest@{client_address()}" if g.user.is_guest else f"user-{g.user.id}"


def _pending_message(user_id: int) -> str:
    pending = get_session().scalar(select(Submission.id).where(
        Submission.user_id == user_id, Submission.status.in_(PENDING)))
    which = f" (#{pending})" if pending is not None else ""
    return (f"Your previous submission{which} is still being graded. Wait for its verdict, then submit "
            "again: a new submission does not replace one that is waiting.")


@bp.post("/submissions")
@login_required
@limiter.limit(_submission_limit, key_func=account_key, error_message=_submission_limit_message)
@limiter.limit(limit("limit_submissions_per_address"),
               error_message="Too many submissions from your network right now; try again in a minute.")
def create_submission() -> ResponseReturnValue:
    data = _json_body()
    exercise = _exercise_or_404(data.get("exercise"))
    code = _code_field(data)
    db = get_session()
    submission = Submission(user_id=g.user.id, exercise_id=exercise.id, code=code, status=JobStatus.QUEUED,
                            fair_key=fair_key())
    db.add(submission)
    try:
        db.commit()  # stored before grading starts: a crash from here on cannot lose it
    except IntegrityError:
        # The database allows one queued-or-running submission per learner (ix_submissions_one_pending).
        db.rollback()
        response = jsonify(error=_pending_message(g.user.id))
        response.status_code, response.headers["Retry-After"] = 429, "5"
        return response
    jobs.enqueue(submission.id, submission.fair_key)
    response = jsonify(id=submission.id, status=JobStatus.QUEUED)
    response.status_code = 202
    response.headers["Location"] = url_for("api.get_submission", submission_id=submission.id)
    return response


@bp.get("/submissions/<int:submission_id>")
@login_required
def get_submission(submission_id: int) -> ResponseReturnValue:
    submission = get_session().get(Submission, submission_id)
    # Someone else's submission answers 404, not 403: ids of other learners' work are not confirmed.
    if submission is None or (submission.user_id != g.user.id and not g.user.is_instructor):
        abort(404, description="There is no such submission of yours.")
    return jsonify(submission_json(submission))


@bp.get("/submissions")
@login_required
def list_submissions() -> ResponseReturnValue:
    query = select(Submission).where(Submission.user_id == g.user.id)
    if request.args.get("exercise"):
        query = query.where(Submission.exercise_id == request.args["exercise"])
    rows = get_session().scalars(query.order_by(Submission.id.desc()).limit(50)).all()
    return jsonify(submissions=[submission_json(s) for s in rows])


@bp.put("/drafts/<path:exercise_id>")
@login_required
@limiter.limit(limit("limit_drafts_per_account"), key_func=account_key,
               error_message="Too many draft saves; the draft is saved again on your next change.")
@limiter.limit(limit("limit_drafts_per_address"),
               error_message="Too many draft saves from your network right now.")
def save_draft(exercise_id: str) -> ResponseReturnValue:
    exercise = _exercise_or_404(exercise_id)
    code = _code_field(_json_body())
    db = get_session()
    draft = db.scalar(select(Draft).where(Draft.user_id == g.user.id, Draft.exercise_id == exercise.id))
    if draft is None:
        db.add(Draft(user_id=g.user.id, exercise_id=exercise.id, code=code))
    else:
        draft.code = code
    db.commit()
    return "", 204


@bp.get("/progress")
@login_required
def get_progress() -> ResponseReturnValue:
    content = get_content()
    statuses = progress.course_status(g.user, content.course.lessons)
    passed = progress.passed_exercises(g.user)
    attempts = dict(get_session().execute(select(Submission.exercise_id, func.count()).where(
        Submission.user_id == g.user.id).group_by(Submission.exercise_id)).all())
    return jsonify(user=g.user.display_name, lessons=[s.as_json() for s in statuses],
                   exercises=[{"id": ex_id, "passed": ex_id in passed, "attempts": attempts.get(ex_id, 0)}
                              for ex_id in content.course.exercises])


@bp.get("/exercises")
def list_exercises() -> ResponseReturnValue:
    return jsonify(exercises=[{"id": ex.id, "title": ex.title, "entry": ex.entry, "params": list(ex.params),
                               "checks": [{"id": c.id, "title": c.title} for c in ex.checks]}
                              for ex in get_content().course.exercises.values()])
