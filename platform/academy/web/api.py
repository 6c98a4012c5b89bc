"""The JSON API (docs/openapi.yaml): submissions, drafts, progress. Session cookie + CSRF header, or Bearer.

Error messages are in the language the request's Accept-Language names (i18n.current_language), else English."""
from __future__ import annotations

import difflib
import json
from typing import Any

from flask import Blueprint, abort, g, jsonify, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from academy import jobs
from academy.content import get_content
from academy.data import progress
from academy.data.db import get_session
from academy.data.models import GRADED, PENDING, Draft, HintReveal, JobStatus, Submission, SubmissionKind
from academy.rendering import highlight_code, render_markdown
from academy.settings import settings
from academy.web.inputs import code_field
from academy.web.limits import account_key, client_address, limit, limiter, too_many
from academy.web.security import learner_required, login_required
from academy.web.shown import (
    LEARNER_RUN,
    for_learners,
    learner_error,
    submission_json,
)
from grader.core.course import Exercise

bp = Blueprint("api", __name__, url_prefix="/api")

# A learner's second job while one is queued or running is answered 429, to retry after this many seconds.
PENDING_RETRY_S = 5


def _own_submission(submission_id: int) -> Submission:
    submission = get_session().get(Submission, submission_id)
    if submission is None or submission.user_id != g.user.id or submission.kind != SubmissionKind.GRADE:
        abort(404, description=gettext("There is no such submission of yours."))
    return submission


def _json_body() -> dict[str, Any]:
    data = request.get_json()  # a body that is not JSON, or hostile JSON, answers 400 (academy/web/inputs.py)
    if not isinstance(data, dict):
        abort(400, description=gettext('Send a JSON object, e.g. {"exercise": "...", "code": "..."}.'))
    return data


def _exercise_or_404(exercise_id: Any) -> Exercise:
    if not isinstance(exercise_id, str):
        abort(400, description=gettext('"exercise" must be an exercise id such as "mixed-precision/amp-step".'))
    try:
        return get_content().exercise(exercise_id)
    except KeyError:
        abort(404, description=gettext("There is no exercise '%(exercise)s'.", exercise=exercise_id))


def _submission_limit() -> str:
    count, window_s = settings().submission_rate
    return f"{count} per {window_s} seconds"


def _submission_limit_message() -> str:
    count, window_s = settings().submission_rate
    return gettext("Too many submissions: at most %(count)s per %(seconds)s s.", count=count, seconds=window_s)


def fair_key() -> str:
    """Whose turn a submission takes in the grading line (academy/fairness.py): each account its own;
    guests by client address, so guests minted in bulk from one client share a single turn."""
    return f"guest@{client_address()}" if g.user.is_guest else f"user-{g.user.id}"


def _pending_message(user_id: int) -> str:
    pending = get_session().scalar(select(Submission).where(
        Submission.user_id == user_id, Submission.status.in_(PENDING)))
    if pending is not None and pending.kind == SubmissionKind.RUN:
        return gettext("Your Run is still going. Wait for its output, then try again: one job at a time per "
                       "learner.")
    if pending is None:  # it finished meanwhile
        return gettext("Your previous submission is still being graded. Wait for its verdict, then submit again: "
                       "a new submission does not replace one that is waiting.")
    return gettext("Your previous submission (#%(id)s) is still being graded. Wait for its verdict, then submit "
                   "again: a new submission does not replace one that is waiting.", id=pending.id)


def _queue(kind: SubmissionKind, exercise: Exercise, code: str, endpoint: str) -> ResponseReturnValue:
    """Store a submission or a Run as queued and start its job; 429 while the learner has one pending (the
    database's ix_submissions_one_pending covers both kinds)."""
    db = get_session()
    submission = Submission(user_id=g.user.id, exercise_id=exercise.id, code=code, status=JobStatus.QUEUED,
                            fair_key=fair_key(), kind=kind)
    db.add(submission)
    try:
        db.commit()  # stored before grading starts: a crash from here on cannot lose it
    except IntegrityError:
        # The database allows one queued-or-running submission per learner (ix_submissions_one_pending).
        db.rollback()
        return too_many(jsonify(error=_pending_message(g.user.id), retry_after=PENDING_RETRY_S), PENDING_RETRY_S)
    jobs.enqueue(submission.id, submission.fair_key)
    response = jsonify(id=submission.id, status=JobStatus.QUEUED)
    response.status_code = 202
    response.headers["Location"] = url_for(endpoint, submission_id=submission.id)
    return response


@bp.post("/submissions")
@learner_required
@limiter.limit(_submission_limit, key_func=account_key, error_message=_submission_limit_message)
@limiter.limit(limit("limit_submissions_per_address"),
               error_message=lambda: gettext("Too many submissions from your network right now; try again in a "
                                             "minute."))
def create_submission() -> ResponseReturnValue:
    data = _json_body()
    exercise = _exercise_or_404(data.get("exercise"))
    return _queue(SubmissionKind.GRADE, exercise, code_field(data), "api.get_submission")


@bp.post("/runs")
@learner_required
@limiter.limit(limit("limit_runs_per_account"), key_func=account_key,
               error_message=lambda: gettext("Too many Runs; wait a minute, or submit."))
@limiter.limit(limit("limit_runs_per_address"),
               error_message=lambda: gettext("Too many Runs from your network right now."))
def create_run() -> ResponseReturnValue:
    """Run the learner's function once on the exercise's example: output, return value or error; no verdict,
    not an attempt. It is one job like a submission: one pending job per learner, whichever kind."""
    data = _json_body()
    exercise = _exercise_or_404(data.get("exercise"))
    return _queue(SubmissionKind.RUN, exercise, code_field(data), "api.get_run")


def _wait_seconds() -> float:
    """`?wait=S`: how long the GET may wait for the row to finish (academy/jobs/waiting.py); absent, 0."""
    given = request.args.get("wait", "0")
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        abort(400, description=gettext('"wait" must be a number of seconds, e.g. ?wait=20.'))
    return seconds


def _finished_or_waited(row: Submission) -> Submission:
    """The row once its status differs from `?seen=` (the status the page last showed: queued or running;
    absent, the status now), or once `?wait=` ran out; read again by its id each time. A page then says
    "Running" as soon as it runs, even when the job started between the page's POST and its first GET."""
    seconds, seen = _wait_seconds(), request.args.get("seen")
    if seen is not None and seen not in PENDING:
        abort(400, description=gettext('"seen" must be a status that can change: queued or running.'))
    seen = seen or row.status
    if row.status not in PENDING or row.status != seen or not seconds:
        return row
    db = get_session()

    def read() -> Submission:
        db.rollback()  # a GET writes nothing: end the read, so the next one sees what a job committed since
        return db.get(Submission, row.id)

    return jobs.finishes().wait(read, lambda current: current is None or current.status != seen,
                                   seconds, who=f"user-{g.user.id}", address=client_address()) or row


@bp.get("/runs/<int:submission_id>")
@login_required
def get_run(submission_id: int) -> ResponseReturnValue:
    run = get_session().get(Submission, submission_id)
    if run is None or run.user_id != g.user.id or run.kind != SubmissionKind.RUN:
        abort(404, description=gettext("There is no such Run of yours."))
    run = _finished_or_waited(run)
    ran = json.loads(run.result_json) if run.result_json and run.status == JobStatus.DONE else None
    if ran is not None and for_learners():
        ran = {key: ran[key] for key in LEARNER_RUN if key in ran}
    return jsonify(id=run.id, exercise=run.exercise_id, status=run.status, created_at=run.created_at.isoformat() + "Z",
                   error=learner_error(run) if for_learners() else run.error_message, run=ran)


@bp.get("/submissions/<int:submission_id>")
@login_required
def get_submission(submission_id: int) -> ResponseReturnValue:
    submission = get_session().get(Submission, submission_id)
    # Someone else's submission answers 404, not 403: ids of other learners' work are not confirmed.
    if submission is None or submission.kind != SubmissionKind.GRADE or \
            (submission.user_id != g.user.id and not g.user.is_instructor):
        abort(404, description=gettext("There is no such submission of yours."))
    return jsonify(submission_json(_finished_or_waited(submission), code=True))


@bp.post("/submissions/<int:submission_id>/hints")
@login_required
def reveal_hint(submission_id: int) -> ResponseReturnValue:
    """Reveal the next hint of one failed check of one's own submission, and record that it was revealed.
    No rate limit of its own: it writes at most one row per hint of a failed check, and nothing once all
    are shown."""
    submission = _own_submission(submission_id)
    check_id = _json_body().get("check")
    result = submission.result
    check = next((c for c in (result or {}).get("checks", []) if c["id"] == check_id), None)
    if check is None or check["status"] != "failed":
        abort(404, description=gettext("That check did not fail in this submission: it has no hint to show."))
    hints = list(check.get("hints") or [])
    db = get_session()
    shown = db.scalar(select(func.count()).select_from(HintReveal).where(
        HintReveal.submission_id == submission.id, HintReveal.check_id == check_id)) or 0
    if shown < len(hints):
        db.add(HintReveal(user_id=g.user.id, submission_id=submission.id, check_id=check_id, number=shown + 1))
        try:
            db.commit()
            shown += 1
        except IntegrityError:  # the same hint revealed twice at once (a double click): it is recorded
            db.rollback()
            shown = db.scalar(select(func.count()).select_from(HintReveal).where(
                HintReveal.submission_id == submission.id, HintReveal.check_id == check_id)) or 0
    return jsonify(check=check_id, hints=hints[:shown], hints_total=len(hints))


@bp.get("/submissions/<int:submission_id>/diff")
@login_required
def submission_diff(submission_id: int) -> ResponseReturnValue:
    """The submission's code against the learner's previous submission of the same exercise (unified diff)."""
    submission = _own_submission(submission_id)
    previous = get_session().scalar(select(Submission).where(
        Submission.user_id == g.user.id, Submission.exercise_id == submission.exercise_id, GRADED,
        Submission.id < submission.id).order_by(Submission.id.desc()).limit(1))
    if previous is None:
        return jsonify(id=submission.id, previous=None, diff="")
    lines = difflib.unified_diff(previous.code.splitlines(keepends=True), submission.code.splitlines(keepends=True),
                                 f"submission #{previous.id}", f"submission #{submission.id}")
    return jsonify(id=submission.id, previous=previous.id,
                   diff="".join(line if line.endswith("\n") else line + "\n" for line in lines))


@bp.get("/submissions")
@login_required
def list_submissions() -> ResponseReturnValue:
    query = select(Submission).where(Submission.user_id == g.user.id, GRADED)
    if request.args.get("exercise"):
        query = query.where(Submission.exercise_id == request.args["exercise"])
    rows = get_session().scalars(query.order_by(Submission.id.desc()).limit(50)).all()
    return jsonify(submissions=[submission_json(s) for s in rows])


@bp.put("/drafts/<path:exercise_id>")
@login_required
@limiter.limit(limit("limit_drafts_per_account"), key_func=account_key,
               error_message=lambda: gettext("Too many draft saves; the draft is saved again on your next change."))
@limiter.limit(limit("limit_drafts_per_address"),
               error_message=lambda: gettext("Too many draft saves from your network right now."))
def save_draft(exercise_id: str) -> ResponseReturnValue:
    exercise = _exercise_or_404(exercise_id)
    code = code_field(_json_body())
    size, address = len(code.encode("utf-8")), client_address()
    _check_draft_room(exercise.id, size, address)
    db = get_session()
    for last_try in (False, True):
        draft = db.scalar(select(Draft).where(Draft.user_id == g.user.id, Draft.exercise_id == exercise.id))
        if draft is None:
            db.add(Draft(user_id=g.user.id, exercise_id=exercise.id, code=code, size_bytes=size, address=address))
        else:
            draft.code, draft.size_bytes, draft.address = code, size, address
        try:
            db.commit()
            break
        except IntegrityError:  # a first save of this draft at the same moment (two tabs): save over it
            db.rollback()
            if last_try:
                raise
    return "", 204


def _stored(*where: Any) -> int:
    return get_session().scalar(select(func.coalesce(func.sum(Draft.size_bytes), 0)).where(*where)) or 0


def _check_draft_room(exercise_id: str, size: int, address: str) -> None:
    """413 when this draft would take the account's drafts, or those last saved from this address, past their
    quota (DLA_DRAFT_KB_PER_ACCOUNT, DLA_DRAFT_KB_PER_ADDRESS); the draft stored before stays. Two saves at
    the same moment may both pass: the quotas hold to within one draft (256 KB) per request in flight."""
    own = settings()
    this_draft = (Draft.user_id == g.user.id) & (Draft.exercise_id == exercise_id)
    if size <= _stored(this_draft):
        return  # no bigger than what it replaces: always saved, even where a quota was lowered since
    account_kb = -(-(_stored(Draft.user_id == g.user.id, ~this_draft) + size) // 1024)
    if account_kb > own.draft_kb_per_account:
        abort(413, description=gettext(
            "Your drafts would take %(size)s KB, more than the %(limit)s KB an account keeps. This draft was not "
            "saved; the version saved before is kept.", size=account_kb, limit=own.draft_kb_per_account))
    address_kb = -(-(_stored(Draft.address == address, ~this_draft) + size) // 1024)
    if address_kb > own.draft_kb_per_address:
        abort(413, description=gettext(
            "The drafts saved from your network would take %(size)s KB, more than the %(limit)s KB it keeps. "
            "This draft was not saved; the version saved before is kept.", size=address_kb,
            limit=own.draft_kb_per_address))


@bp.get("/progress")
@login_required
def get_progress() -> ResponseReturnValue:
    content = get_content()
    statuses = progress.course_status(g.user, content.course.lessons)
    passed = progress.passed_exercises(g.user)
    attempts = dict(get_session().execute(select(Submission.exercise_id, func.count()).where(
        Submission.user_id == g.user.id, GRADED).group_by(Submission.exercise_id)).all())
    return jsonify(user=g.user.email or g.user.display_name, name=g.user.name,
                   lessons=[s.as_json() for s in statuses],
                   exercises=[{"id": ex_id, "passed": ex_id in passed, "attempts": attempts.get(ex_id, 0)}
                              for ex_id in content.course.exercises])


@bp.get("/exercises/<path:exercise_id>/solution")
@login_required
def get_solution(exercise_id: str) -> ResponseReturnValue:
    """The reference solution and its explanation, once the learner may see them (progress.solution_open)."""
    exercise = _exercise_or_404(exercise_id)
    if not progress.solution_open(g.user, exercise):
        response = jsonify(error=progress.solution_rule(exercise))
        response.status_code = 403
        return response
    explanation = exercise.solution_markdown()
    code = exercise.solution_code()
    return jsonify(exercise=exercise.id, code=code, code_html=highlight_code(code), explanation=explanation,
                   explanation_html=render_markdown(explanation))


@bp.get("/exercises")
def list_exercises() -> ResponseReturnValue:
    return jsonify(exercises=[{"id": ex.id, "title": ex.title, "entry": ex.entry, "params": list(ex.params),
                               "checks": [{"id": c.id, "title": c.title} for c in ex.checks]}
                              for ex in get_content().course.exercises.values()])
