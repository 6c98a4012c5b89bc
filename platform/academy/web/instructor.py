"""Instructor pages: content with its validate status, content reload, and a dashboard per exercise
with its latest regrade."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from flask import Blueprint, Response, abort, current_app, flash, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext, ngettext
from sqlalchemy import func, select

from academy import i18n, jobs
from academy.content import get_content, reload_content
from academy.data import gradebook
from academy.data.accounts import AccountError, clean_name, clean_sis_id
from academy.data.db import get_session
from academy.data.models import GRADED, PENDING, JobStatus, RegradeRun, Submission, User, ValidationRun, stored_result
from academy.data.roles import ROLES, change_role, describe
from academy.settings import settings
from academy.web.lessons import step_page
from academy.web.security import end_other_sessions, instructor_required
from grader.core.course import CourseError

bp = Blueprint("instructor", __name__, url_prefix="/instructor")

PER_PAGE = 20


@dataclass(frozen=True)
class CheckCounts:
    id: str
    title: str
    failed: int  # judged and failed
    explained: int  # failed too, but reported skipped: a check it names in `after` failed first


@dataclass(frozen=True)
class ExerciseStats:
    attempts: int
    learners: int
    passed_learners: int
    checks: list[CheckCounts]  # every check that failed at least once, most failures first
    not_loaded: int  # graded submissions no check judged: the code did not load, ran out of time, crashed
    platform_errors: int  # submissions the platform could not grade (status "error")
    page: Page  # of the submissions, newest first

    @property
    def pass_rate(self) -> float:
        return self.passed_learners / self.learners if self.learners else 0.0


@dataclass(frozen=True)
class Page:
    items: list
    number: int
    total: int
    per_page: int = PER_PAGE

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))


def page_number() -> int:
    try:
        return max(1, int(request.args.get("page", "1")))
    except ValueError:
        abort(400, description=gettext("page must be a whole number."))


def exercise_stats(exercise_id: str, page: int = 1) -> ExerciseStats:
    db = get_session()
    where = (Submission.exercise_id == exercise_id) & GRADED  # attempts, not Runs
    attempts = db.scalar(select(func.count()).select_from(Submission).where(where)) or 0
    learners = db.scalar(select(func.count(Submission.user_id.distinct())).where(where)) or 0
    passed = db.scalar(select(func.count(Submission.user_id.distinct())).where(where, Submission.passed.is_(True)))
    errors = db.scalar(select(func.count()).select_from(Submission).where(where, Submission.status == JobStatus.ERROR))
    failed: Counter[str] = Counter()
    explained: Counter[str] = Counter()
    titles: dict[str, str] = {}
    not_loaded = 0
    for (result_json,) in db.execute(select(Submission.result_json).where(where, Submission.status == JobStatus.DONE)):
        # Failures of judged checks only. Checks skipped because the code did not load are no failure of
        # every check (a syntax error would otherwise count against "gradients cleared" too); those
        # submissions are counted once, apart.
        checks = (stored_result(result_json) or {}).get("checks", [])
        if checks and all(c["status"] == "skipped" and c["because"] == "load" for c in checks):
            not_loaded += 1
            continue
        for check in checks:
            titles[check["id"]] = check["title"]
            if check["status"] == "failed":
                failed[check["id"]] += 1
            elif check["status"] == "skipped" and check["because"] not in (None, "load"):
                explained[check["id"]] += 1
    counts = [CheckCounts(cid, titles[cid], failed[cid], explained[cid]) for cid in titles
              if failed[cid] or explained[cid]]
    counts.sort(key=lambda c: (-c.failed, -c.explained, c.id))
    recent = db.scalars(select(Submission).where(where).join(User).order_by(Submission.id.desc())
                        .offset((page - 1) * PER_PAGE).limit(PER_PAGE)).all()
    return ExerciseStats(attempts, learners, passed or 0, counts, not_loaded, errors or 0,
                         Page(list(recent), page, attempts))


@dataclass(frozen=True)
class ValidationState:
    """What the overview says of one exercise's validation: the last one that finished (kept across restarts,
    with its date), one still queued or running, and whether the exercise's files changed since the last."""
    last: ValidationRun | None
    pending: ValidationRun | None
    changed_since: bool


def validation_states(course_exercises: dict) -> dict[str, ValidationState]:
    rows = get_session().scalars(select(ValidationRun).order_by(ValidationRun.id)).all()
    last: dict[str, ValidationRun] = {}
    pending: dict[str, ValidationRun] = {}
    for row in rows:
        (pending if row.status in PENDING else last)[row.exercise_id] = row
    states = {}
    for exercise_id, exercise in course_exercises.items():
        done = last.get(exercise_id)
        changed = bool(done and done.content_hash and done.content_hash != jobs.exercise_fingerprint(exercise.path))
        waiting = pending.get(exercise_id)
        states[exercise_id] = ValidationState(done, waiting if waiting and (not done or waiting.id > done.id)
                                              else None, changed)
    return states


@bp.route("/")
@instructor_required
def overview() -> ResponseReturnValue:
    course = get_content().course
    # Content that changed (or was never validated) is validated in the background as the page is shown: no
    # "not run" waiting for someone to press Validate (DLA_VALIDATE_ON_CHANGE).
    started = jobs.validate_changed(course.exercises) if settings().validate_on_change else []
    runs = validation_states(course.exercises)
    busy = any(state.pending is not None for state in runs.values())
    return render_template("instructor/overview.html", course=course, runs=runs, busy=busy, started=started,
                           last_validation_at=jobs.last_validation_at(),
                           can_reload=settings().content_reload,
                           translations=i18n.coverage(get_content().course, get_content().translations),
                           languages=i18n.LANGUAGES, image_note=jobs.grading_sandbox(current_app).stale_image_note(),
                           step_page=step_page)


@bp.post("/validate/<path:exercise_id>")
@instructor_required
def validate(exercise_id: str) -> ResponseReturnValue:
    content = get_content()
    ids = list(content.course.exercises) if exercise_id == "all" else [exercise_id]
    db = get_session()
    for ex_id in ids:
        if ex_id not in content.course.exercises:
            abort(404, description=gettext("There is no exercise '%(id)s'.", id=ex_id))
        run = ValidationRun(exercise_id=ex_id)
        db.add(run)
        db.commit()
        jobs.enqueue_validation(run.id)
    flash(ngettext("Validating %(num)d exercise in the background; this page refreshes until done.",
                   "Validating %(num)d exercises in the background; this page refreshes until done.", len(ids)), "info")
    return redirect(url_for("instructor.overview"))


@bp.post("/regrade/<path:exercise_id>")
@instructor_required
def regrade(exercise_id: str) -> ResponseReturnValue:
    if exercise_id not in get_content().course.exercises:
        abort(404, description=gettext("There is no exercise '%(id)s'.", id=exercise_id))
    run, started = jobs.request_regrade(exercise_id)
    if started:
        flash(ngettext("Regrading %(num)d finished submission in the background; this page refreshes until done.",
                       "Regrading %(num)d finished submissions in the background; this page refreshes until done.",
                       run.total), "info")
    else:
        flash(gettext("A regrade of this exercise is already %(status)s (run %(id)s); it is shown below.",
                      status=gettext(run.status), id=run.id), "info")  # "queued"/"running": i18n.STATUSES
    return redirect(url_for("instructor.dashboard", exercise_id=exercise_id))


def latest_regrade(exercise_id: str) -> RegradeRun | None:
    return get_session().scalar(select(RegradeRun).where(RegradeRun.exercise_id == exercise_id)
                                .order_by(RegradeRun.id.desc()).limit(1))


@bp.post("/reload")
@instructor_required
def reload() -> ResponseReturnValue:
    if not settings().content_reload:
        abort(403, description=gettext("Content reload is switched off (DLA_CONTENT_RELOAD=0); restart to load "
                                       "content."))
    try:
        content = reload_content(current_app)
    except CourseError as exc:
        flash(gettext("The course files have a problem; the previous content stays live. %(problem)s",
                      problem=exc), "error")
    else:
        # Two counts, two plurals: the sentence is made of its two halves, each translated on its own.
        flash(gettext("Reloaded %(lessons)s, %(exercises)s.",
                      lessons=ngettext("%(num)d lesson", "%(num)d lessons", len(content.course.lessons)),
                      exercises=ngettext("%(num)d exercise", "%(num)d exercises", len(content.course.exercises))),
              "info")
    return redirect(url_for("instructor.overview"))


@bp.route("/exercises/<path:exercise_id>")
@instructor_required
def dashboard(exercise_id: str) -> ResponseReturnValue:
    try:
        exercise = get_content().exercise(exercise_id)
    except KeyError:
        abort(404, description=gettext("There is no exercise '%(id)s'.", id=exercise_id))
    return render_template("instructor/dashboard.html", exercise=exercise,
                           stats=exercise_stats(exercise.id, page_number()), regrade=latest_regrade(exercise.id))


@bp.route("/learners/")
@instructor_required
def learners() -> ResponseReturnValue:
    course = get_content().course
    page = page_number()
    ids, total = gradebook.learner_ids(page, PER_PAGE)
    return render_template("instructor/learners.html", course=course, records=gradebook.records(course, ids),
                           page=Page([], page, total), formats=list(gradebook.FORMATS),
                           untried=settings().gradebook_untried)


@bp.route("/instructors")
@instructor_required
def instructors() -> ResponseReturnValue:
    """Who is an instructor, each linked to the page whose form revokes the role; an account found by email."""
    people = get_session().scalars(select(User).where(User.role == "instructor").order_by(User.id)).all()
    return render_template("instructor/instructors.html", instructors=people)


@bp.route("/learners/find")
@instructor_required
def find_learner() -> ResponseReturnValue:
    """An account's page by its email: the list shows only learners who started, and an account that should
    become an instructor may not have."""
    email = request.args.get("email", "").strip().lower()
    user = get_session().scalar(select(User).where(func.lower(User.email) == email)) if email else None
    if user is None:
        flash(gettext("No account has the email %(email)s.", email=email), "error")
        return redirect(url_for("instructor.instructors"))
    return redirect(url_for("instructor.learner", user_id=user.id))


@bp.route("/learners/<int:user_id>")
@instructor_required
def learner(user_id: int) -> ResponseReturnValue:
    course = get_content().course
    found = gradebook.records(course, [user_id])
    if not found:
        abort(404, description=gettext("There is no such learner."))
    from academy.data.models import LtiIdentity

    db = get_session()
    lti = db.scalar(select(LtiIdentity).where(LtiIdentity.user_id == user_id))
    instructors = db.scalar(select(func.count()).select_from(User).where(User.role == "instructor")) or 0
    return render_template("instructor/learner.html", course=course, record=found[0], lti=lti,
                           last_instructor=found[0].user.is_instructor and instructors <= 1)


@bp.post("/learners/<int:user_id>/role")
@instructor_required
def learner_role(user_id: int) -> ResponseReturnValue:
    """Make an account an instructor or a learner again, once the form's box confirms it. Every session of the
    account ends (the acting instructor's own browser stays signed in when it changes its own role) and its API
    tokens are revoked; the last instructor keeps the role; a refused change changes nothing, and the page says
    why."""
    db = get_session()
    user = db.get(User, user_id)
    if user is None:
        abort(404, description=gettext("There is no such learner."))
    role = request.form.get("role", "")
    if role not in ROLES:
        abort(400, description=gettext("role must be learner or instructor."))
    back = redirect(url_for("instructor.learner", user_id=user_id)), 303
    if request.form.get("confirm") != "yes":
        flash(gettext("Tick the box that confirms the change; the role did not change."), "error")
        return back
    own = user.id == g.user.id
    try:
        change_role(user, role, by=f"instructor {describe(g.user)} on the instructor pages",
                    end_sessions=end_other_sessions)
    except AccountError as exc:
        flash(str(exc), "error")
        return back
    if own:  # only a revocation can be one's own (an instructor is one already): these pages are closed now
        flash(gettext("You are no longer an instructor. Your other sessions were signed out and your API tokens "
                      "revoked; this session stays, without the instructor pages."), "info")
        return redirect(url_for("index")), 303
    who = user.display_name
    flash(gettext("%(who)s is now an instructor. Every session of theirs was signed out and their API tokens "
                  "revoked: the role holds from their next sign-in.", who=who) if role == "instructor" else
          gettext("%(who)s is no longer an instructor. Every session of theirs was signed out and their API "
                  "tokens revoked.", who=who), "info")
    return back


@bp.post("/learners/<int:user_id>/profile")
@instructor_required
def learner_profile(user_id: int) -> ResponseReturnValue:
    """An instructor corrects a learner's name or sets the SIS id Canvas matches by. A refused value changes
    nothing, and the page says why."""
    db = get_session()
    user = db.get(User, user_id)
    if user is None or user.is_instructor:
        abort(404, description=gettext("There is no such learner."))
    try:
        name = clean_name(request.form.get("name", ""), required=False)
        sis_id = clean_sis_id(request.form.get("sis_id", ""), user=user)
    except AccountError as exc:
        flash(str(exc), "error")
        return redirect(url_for("instructor.learner", user_id=user_id)), 303
    user.name, user.sis_id = name, sis_id
    db.commit()
    flash(gettext("Saved the name and SIS id of %(who)s.", who=user.display_name), "info")
    return redirect(url_for("instructor.learner", user_id=user_id)), 303


@bp.route("/gradebook.csv")
@instructor_required
def gradebook_csv() -> ResponseReturnValue:
    shape = request.args.get("format", "plain")
    if shape not in gradebook.FORMATS:
        abort(400, description=gettext("format must be one of %(formats)s.", formats=", ".join(gradebook.FORMATS)))
    untried = request.args.get("untried", settings().gradebook_untried)
    if untried not in gradebook.UNTRIED:
        abort(400, description=gettext("untried must be one of %(choices)s.", choices=", ".join(gradebook.UNTRIED)))
    guests = request.args.get("guests", "0")
    if guests not in ("0", "1"):
        abort(400, description=gettext("guests must be 0 or 1."))
    body = gradebook.gradebook_csv(get_content().course, shape, untried=untried, guests=guests == "1")
    return Response(body, mimetype="text/csv", headers={
        "Content-Disposition": f'attachment; filename="gradebook-{shape}.csv"', "Cache-Control": "no-store"})
