"""Learner pages: the course, one lesson step at a time, and the quick-check quiz."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from flask import Blueprint, abort, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import LazyString, gettext, lazy_gettext
from markupsafe import Markup
from sqlalchemy import select

from academy.content import get_content
from academy.data import progress
from academy.data.db import get_session
from academy.data.models import GRADED, Draft, QuizAnswer, Submission
from academy.localized import localize, localize_course
from academy.rendering import Untranslated, code_spans
from academy.settings import settings
from academy.web.limits import account_key, limit, limiter
from academy.web.security import from_this_site, learner_required, public_lessons, public_page
from grader.core.course import Card, ExerciseStep, Lesson, Quiz, QuizQuestion, Step

bp = Blueprint("lessons", __name__, url_prefix="/lessons")


@bp.app_template_filter("marked_code")
def marked_code(text: Any) -> Markup:
    """The `marked` filter (English shown on another language's page is marked lang="en") for text that writes
    code between `backticks` (the quiz): each code span highlighted as a card's code is."""
    html = code_spans(str(text))
    return Markup('<span lang="en" dir="ltr">%s</span>') % html if isinstance(text, Untranslated) else html


def course() -> ResponseReturnValue:  # the site's front page, registered at "/"
    content = get_content()
    return render_template("lessons/course.html", course=content.course, heading=localize_course(content.course),
                           statuses=progress.course_status(g.user, content.course.lessons),
                           public_lessons=public_lessons(), localize=localize)


def _lesson_or_404(lesson_id: str) -> Lesson:
    try:
        return get_content().lesson(lesson_id)
    except KeyError:
        abort(404, description=gettext("There is no lesson '%(id)s'.", id=lesson_id))


@bp.route("/<lesson_id>")
@public_page
def resume(lesson_id: str) -> ResponseReturnValue:
    lesson = _lesson_or_404(lesson_id)
    number = progress.resume_number(g.user, lesson) if g.user else 1
    return redirect(url_for("lessons.step", lesson_id=lesson.id, step_id=lesson.steps[number - 1].id))


@bp.route("/<lesson_id>/<int:number>")
@public_page
def numbered_step(lesson_id: str, number: int) -> ResponseReturnValue:
    """Step URLs by number (before step ids): the step at that position today."""
    lesson = _lesson_or_404(lesson_id)
    if not 1 <= number <= len(lesson.steps):
        abort(404, description=gettext("Lesson '%(id)s' has steps 1 to %(last)s.", id=lesson.id,
                                       last=len(lesson.steps)))
    target = url_for("lessons.step", lesson_id=lesson.id, step_id=lesson.steps[number - 1].id)
    return redirect(f"{target}?{request.query_string.decode()}" if request.query_string else target, code=301)


@bp.route("/<lesson_id>/<step_id>")
@public_page
def step(lesson_id: str, step_id: str) -> ResponseReturnValue:
    content = get_content()
    lesson = _lesson_or_404(lesson_id)
    try:
        number = lesson.index(step_id) + 1
    except KeyError:
        abort(404, description=gettext("Lesson '%(id)s' has no step '%(step)s'.", id=lesson.id, step=step_id))
    # Opening a step marks it read and makes it the resume point, but only when the learner opened it: another
    # site's link (the session cookie goes with it) shows the page and records nothing (security.from_this_site).
    if from_this_site() and g.user is not None:
        progress.record_visit(g.user, lesson.id, step_id)
    elif from_this_site():
        progress.remember_visitor_visit(lesson.id, step_id)
    current = lesson.steps[number - 1]
    t = localize(lesson)
    context = {"lesson": lesson, "number": number, "step": current, "t": t,
               "html": t.step_html(current, content.step_html(current)),
               "status": progress.lesson_status(g.user, lesson), }
    page = step_page(current)
    context["tutor"] = page.tutor and settings().tutor_enabled
    if page.extras is not None:
        context.update(page.extras(lesson, current))
    return render_template("lessons/step.html", page=page, **context)


def _exercise_extras(lesson: Lesson, step: ExerciseStep) -> dict[str, Any]:
    editor = _editor_state(step)
    t = localize(lesson)
    for check in editor["checks"]:
        check["title"] = t.check_title(step, check["id"], check["title"])
    return {"editor": editor}


def _editor_state(current: ExerciseStep) -> dict:
    exercise = current.exercise
    # The time limit the learner's code runs under, in a Run and a Submit alike (lesson.js shows it meanwhile).
    limit = {"time_limit_s": exercise.time_limit_s}
    if g.user is None:  # a visitor: the starter code; lesson.js keeps their draft in this browser
        return {"exercise": exercise.id, "starter": exercise.starter_code(), "code": exercise.starter_code(),
                "latest": None, "checks": [{"id": c.id, "title": c.title} for c in exercise.checks],
                "solution_open": False, "solution_rule": progress.solution_rule(exercise), "visitor": True,
                "has_draft": False, "draft_saved_at": None, **limit}
    db = get_session()
    draft = db.scalar(select(Draft).where(Draft.user_id == g.user.id, Draft.exercise_id == exercise.id))
    latest = db.scalar(select(Submission.id).where(Submission.user_id == g.user.id,
                                                   Submission.exercise_id == exercise.id, GRADED)
                       .order_by(Submission.id.desc()).limit(1))
    return {"exercise": exercise.id, "starter": exercise.starter_code(),
            "code": draft.code if draft else exercise.starter_code(), "latest": latest, "visitor": False,
            "has_draft": draft is not None,
            "draft_saved_at": draft.updated_at.isoformat() + "Z" if draft and draft.updated_at else None, **limit,
            "checks": [{"id": c.id, "title": c.title} for c in exercise.checks],
            "solution_open": progress.solution_open(g.user, exercise),
            "solution_rule": progress.solution_rule(exercise)}


def _answers(lesson: Lesson) -> list[QuizAnswer]:
    if g.user is None:
        return []
    return list(get_session().scalars(select(QuizAnswer).where(QuizAnswer.user_id == g.user.id,
                                                               QuizAnswer.lesson_id == lesson.id)
                                      .order_by(QuizAnswer.created_at, QuizAnswer.id)))


def first_tries(lesson: Lesson, quiz: Quiz) -> dict[str, bool]:
    """Whether the learner's first answer to each question they answered was right, by question id."""
    first: dict[str, bool] = {}
    for row in _answers(lesson):
        first.setdefault(row.question_id, row.correct)
    return {q.id: first[q.id] for q in quiz.questions if q.id in first}


def _quiz_state(lesson: Lesson, quiz: Quiz) -> dict[str, Any]:
    latest = {row.question_id: row for row in _answers(lesson)}  # the newest answer per question wins
    salt = str(g.user.id) if g.user else "visitor"
    options: dict[str, tuple] = {q.id: q.shuffled(salt) for q in quiz.questions}
    return {"answers": latest, "options": options, "first_tries": first_tries(lesson, quiz)}


@dataclass(frozen=True)
class StepPage:
    """How the web app shows one kind of step (grader.core.course.STEP_KINDS)."""
    partial: str  # the template that draws the step's body on its page
    label: LazyString  # the kind of step, as the instructor's content table names it
    extras: Callable[[Lesson, Any], dict[str, Any]] | None = None  # what its page needs beyond the step's HTML
    editor: bool = False  # its page loads the code editor and the verdict's pictures
    tutor: bool = True  # its page offers the tutor's panel (while the tutor is on): a quiz is the learner's own


# Every kind of step, by its class: a kind the grader adds and this registry lacks fails its test
# (tests/web/test_lessons.py) instead of falling through a chain of string comparisons.
STEP_PAGES: dict[type, StepPage] = {
    Card: StepPage("lessons/_card.html", lazy_gettext("card")),
    ExerciseStep: StepPage("lessons/_exercise.html", lazy_gettext("exercise"), _exercise_extras, editor=True),
    Quiz: StepPage("lessons/_quiz.html", lazy_gettext("quiz"), _quiz_state, tutor=False),
}


def step_page(step: Step) -> StepPage:
    return STEP_PAGES[type(step)]


@bp.route("/<lesson_id>/end")
@public_page
def lesson_end(lesson_id: str) -> ResponseReturnValue:
    """The lesson's completion page: the quiz's first-try result, what was practised, the next lesson."""
    content = get_content()
    lesson = _lesson_or_404(lesson_id)
    status = progress.lesson_status(g.user, lesson)
    passed = progress.passed_exercises(g.user) if g.user else set()
    quiz = lesson.quiz
    tries = first_tries(lesson, quiz) if quiz else {}
    lessons = content.course.lessons
    following = lessons[lessons.index(lesson) + 1] if lesson is not lessons[-1] else None
    t = localize(lesson)
    exercises = [(s, s.exercise.id in passed) for s in lesson.steps if isinstance(s, ExerciseStep)]
    cards = [s for s in lesson.steps if isinstance(s, Card)]
    still_open = [s for s, done in zip(lesson.steps, status.done) if not done]  # which, not only how many
    # The page lists steps by title: where any is shown in English (marked lang="en"), the notice says so too.
    listed = [*cards, *(e for e, _ in exercises), *still_open]
    shown = [t.summary, *(t.step_title(s, count=False) for s in listed)]
    return render_template("lessons/end.html", lesson=lesson, t=t, status=status, quiz=quiz, first_tries=tries,
                           exercises=exercises, cards=cards, still_open=still_open, following=following,
                           localize=localize, english_shown=any(isinstance(text, Untranslated) for text in shown))


@bp.post("/<lesson_id>/quiz/<question_id>")
@learner_required
@limiter.limit(limit("limit_quiz_answers_per_account"), key_func=account_key,
               error_message=lambda: gettext("Too many quiz answers; wait a minute, then answer again."))
@limiter.limit(limit("limit_quiz_answers_per_address"),
               error_message=lambda: gettext("Too many quiz answers from your network right now."))
def answer(lesson_id: str, question_id: str) -> ResponseReturnValue:
    """Grade one quiz answer on the server: the page never holds the correct option before this."""
    lesson = _lesson_or_404(lesson_id)
    quiz = lesson.quiz
    question = next((q for q in quiz.questions if q.id == question_id), None) if quiz else None
    if question is None:
        abort(404, description=gettext("There is no such quiz question."))
    option = _chosen_option(question)
    db = get_session()
    db.add(QuizAnswer(user_id=g.user.id, lesson_id=lesson.id, question_id=question.id, option_id=option.id,
                      correct=option.correct))
    db.commit()
    return redirect(url_for("lessons.step", lesson_id=lesson.id, step_id=quiz.id, _anchor=f"q-{question.id}"))


def _chosen_option(question: QuizQuestion):  # noqa: ANN202 - grader.core.course.QuizOption
    try:
        return question.option(request.form["option"])
    except KeyError:
        abort(400, description=gettext("Choose one of the options."))
