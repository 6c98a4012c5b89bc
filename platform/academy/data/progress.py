"""What a learner has done: read cards, passed exercises, answered quizzes, and where to resume.

Everything is keyed by ids (steps, exercises, questions), never by position, so an instructor may insert,
remove or reorder steps: nothing unread becomes done and nothing done is lost.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import has_request_context, session
from flask_babel import gettext, ngettext
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm.exc import StaleDataError

from academy.data.db import get_session
from academy.data.models import (
    GRADED,
    PENDING,
    Draft,
    HintReveal,
    LessonProgress,
    QuizAnswer,
    StepVisit,
    Submission,
    TutorMessage,
    User,
)
from grader.core.course import Exercise, Lesson, Progress


@dataclass(frozen=True)
class LessonStatus:
    lesson: Lesson
    done: tuple[bool, ...]  # one per step, in the lesson's order
    position: int  # the resume point, 1-based

    @property
    def done_count(self) -> int:
        return sum(self.done)

    @property
    def total(self) -> int:
        return len(self.done)

    @property
    def percent(self) -> int:
        return round(100 * self.done_count / self.total) if self.total else 0

    @property
    def resume_step_id(self) -> str:
        return self.lesson.steps[self.position - 1].id

    def as_json(self) -> dict:
        return {"lesson": self.lesson.id, "title": self.lesson.title, "steps_done": self.done_count,
                "steps": self.total, "percent": self.percent, "resume_step": self.position,
                "resume_step_id": self.resume_step_id, "done": list(self.done),
                "step_ids": list(self.lesson.step_ids)}


def passed_exercises(user: User) -> set[str]:
    return set(get_session().scalars(select(Submission.exercise_id).distinct()
                                     .where(Submission.user_id == user.id, Submission.passed.is_(True))))


def attempts(user: User, exercise_id: str) -> int:
    return get_session().scalar(select(func.count()).select_from(Submission).where(
        Submission.user_id == user.id, Submission.exercise_id == exercise_id, GRADED)) or 0


def solution_open(user: User, exercise: Exercise) -> bool:
    """The reference solution is shown after a passing submission, or after `solution_after` submissions."""
    if exercise.id in passed_exercises(user):
        return True
    return exercise.solution_after is not None and attempts(user, exercise.id) >= exercise.solution_after


def solution_rule(exercise: Exercise) -> str:
    """When the worked solution opens, in the page's language."""
    if exercise.solution_after is None:
        return gettext("The worked solution opens once you pass this exercise.")
    return ngettext("The worked solution opens once you pass this exercise or after %(num)d submission.",
                    "The worked solution opens once you pass this exercise or after %(num)d submissions.",
                    exercise.solution_after)


def correct_answers(user: User, lesson_id: str) -> set[str]:
    return set(get_session().scalars(select(QuizAnswer.question_id).distinct().where(
        QuizAnswer.user_id == user.id, QuizAnswer.lesson_id == lesson_id, QuizAnswer.correct.is_(True))))


def seen_steps(user: User, lesson_id: str) -> set[str]:
    return set(get_session().scalars(select(StepVisit.step_id).where(
        StepVisit.user_id == user.id, StepVisit.lesson_id == lesson_id)))


def get_position(user: User, lesson_id: str) -> LessonProgress | None:
    return get_session().scalar(select(LessonProgress).where(LessonProgress.user_id == user.id,
                                                             LessonProgress.lesson_id == lesson_id))


def resume_number(user: User, lesson: Lesson) -> int:
    """The 1-based step to resume at: the stored step, else the first (also when that step was removed)."""
    row = get_position(user, lesson.id)
    return lesson.index(row.step_id) + 1 if row is not None and row.step_id in lesson.step_ids else 1


def record_visit(user: User, lesson_id: str, step_id: str) -> None:
    """The learner opened this step: it is the resume point, and it has been seen."""
    db = get_session()
    for last_try in (False, True):
        try:
            row, seen = get_position(user, lesson_id), step_id in seen_steps(user, lesson_id)  # read, then write
            if row is not None and row.step_id == step_id and seen:
                return
            if row is None:
                db.add(LessonProgress(user_id=user.id, lesson_id=lesson_id, step_id=step_id))
            else:
                row.step_id = step_id
            if not seen:
                db.add(StepVisit(user_id=user.id, lesson_id=lesson_id, step_id=step_id))
            db.commit()
            return
        except IntegrityError:
            # Another request stored this lesson's first position or this step's visit at the same moment (two
            # tabs): once more, over what it stored, so neither request's step is lost.
            db.rollback()
        except StaleDataError:  # the account was deleted meanwhile (a merged guest): nothing to record
            db.rollback()
            return
        if last_try:
            return


VISITS_KEY = "visits"  # in a visitor's cookie session: {lesson id: [step ids, in the order last opened]}
MAX_VISITS = 200  # steps kept per visitor (the course has fewer); the cookie stays well under 4 KB


def remember_visitor_visit(lesson_id: str, step_id: str) -> None:
    """A visitor (no account yet) opened this step: kept in this browser's signed cookie session, so what they
    read before a first Run, Submit or sign-up made them a learner counts once it does (`adopt_visits`)."""
    visits = {k: list(v) for k, v in (session.get(VISITS_KEY) or {}).items()}
    steps = [s for s in visits.get(lesson_id, []) if s != step_id] + [step_id]  # the last one is where they are
    visits[lesson_id] = steps
    for kept in visits.values():  # past the cap, a lesson's oldest visits go first
        while sum(map(len, visits.values())) > MAX_VISITS and len(kept) > 1:
            kept.pop(0)
    session[VISITS_KEY] = visits


def visitor_visits() -> dict[str, list[str]]:
    """This browser's visits as a visitor (none outside a request)."""
    return dict(session.get(VISITS_KEY) or {}) if has_request_context() else {}


def adopt_visits(user: User, visits: dict[str, list[str]], lessons: dict[str, Lesson]) -> None:
    """The steps a visitor opened, recorded for the learner they became (their last one per lesson is the
    resume point); steps the course no longer has are left out."""
    for lesson_id, steps in visits.items():
        lesson = lessons.get(lesson_id)
        for step_id in steps if lesson is not None else ():
            if step_id in lesson.step_ids:
                record_visit(user, lesson_id, step_id)


def lesson_status(user: User | None, lesson: Lesson, passed: set[str] | None = None) -> LessonStatus:
    if user is None:  # a visitor: the cards they opened in this browser (exercises and quizzes need a learner)
        seen = [step for step in visitor_visits().get(lesson.id, []) if step in lesson.step_ids]
        facts = Progress(set(seen), set(), set())
        return LessonStatus(lesson, tuple(step.done(facts) for step in lesson.steps),
                            lesson.index(seen[-1]) + 1 if seen else 1)
    passed = passed_exercises(user) if passed is None else passed
    correct = correct_answers(user, lesson.id) if lesson.quiz else set()
    facts = Progress(seen_steps(user, lesson.id), passed, correct)
    return LessonStatus(lesson, tuple(step.done(facts) for step in lesson.steps), resume_number(user, lesson))


def course_status(user: User | None, lessons: list[Lesson]) -> list[LessonStatus]:
    passed = passed_exercises(user) if user else set()
    return [lesson_status(user, lesson, passed) for lesson in lessons]


def has_progress(user: User) -> bool:
    """Whether the user has anything a sign-out would lose: a visited step, a submission, a draft, an answer, a
    conversation with the tutor."""
    db = get_session()
    return any(db.scalar(select(model.id).where(model.user_id == user.id).limit(1)) is not None
               for model in (StepVisit, Submission, Draft, QuizAnswer, TutorMessage))


def summary(user: User) -> dict[str, int]:
    """What a guest would lose, in numbers the sign-out and merge pages show."""
    db = get_session()

    def count(model: type, *where: Any) -> int:
        return db.scalar(select(func.count()).select_from(model).where(model.user_id == user.id, *where)) or 0
    return {"steps": count(StepVisit), "submissions": count(Submission, GRADED), "drafts": count(Draft),
            "passed": len(passed_exercises(user))}


def _newer_wins(model: type[LessonProgress] | type[Draft], key: str, field: str, guest: User, account: User) -> None:
    """One row per `key` and user: the guest's moves to the account, or, where the account has one, the newer
    row's `field` is kept in the account's row."""
    db = get_session()
    mine = {getattr(row, key): row for row in db.scalars(select(model).where(model.user_id == account.id))}
    for row in db.scalars(select(model).where(model.user_id == guest.id)).all():
        kept = mine.get(getattr(row, key))
        if kept is None:
            row.user_id = account.id
            continue
        if row.updated_at > kept.updated_at:
            setattr(kept, field, getattr(row, field))
        db.delete(row)


def merge_guest(guest: User, account: User) -> None:
    """Move a guest's progress into an account (the caller commits). Done steps are united; per exercise the
    newer draft wins; submissions (with their revealed hints) move to the account; per lesson the newer resume
    point wins; quiz answers move for the questions the account never answered, so its first tries stand.
    A guest submission still being graded moves too, unless the account has one waiting (one pending job per
    learner): then it stays with the guest account until it finishes. The guest's conversations with the tutor
    move to the account, beside (and in time order with) its own."""
    db = get_session()
    seen = {(v.lesson_id, v.step_id) for v in db.scalars(select(StepVisit).where(StepVisit.user_id == account.id))}
    for visit in db.scalars(select(StepVisit).where(StepVisit.user_id == guest.id)).all():
        if (visit.lesson_id, visit.step_id) in seen:
            db.delete(visit)
        else:
            visit.user_id = account.id
    _newer_wins(LessonProgress, "lesson_id", "step_id", guest, account)
    _newer_wins(Draft, "exercise_id", "code", guest, account)
    db.flush()
    account_pending = db.scalar(select(Submission.id).where(Submission.user_id == account.id,
                                                            Submission.status.in_(PENDING))) is not None
    for submission in db.scalars(select(Submission).where(Submission.user_id == guest.id)).all():
        if submission.status in PENDING and account_pending:
            continue
        submission.user_id = account.id
    db.flush()
    for reveal in db.scalars(select(HintReveal).where(HintReveal.user_id == guest.id)).all():
        reveal.user_id = account.id
    for message in db.scalars(select(TutorMessage).where(TutorMessage.user_id == guest.id)).all():
        message.user_id = account.id
    answered = {(a.lesson_id, a.question_id) for a in db.scalars(select(QuizAnswer).where(
        QuizAnswer.user_id == account.id))}
    for answer in db.scalars(select(QuizAnswer).where(QuizAnswer.user_id == guest.id)).all():
        if (answer.lesson_id, answer.question_id) not in answered:
            answer.user_id = account.id
    db.flush()
    if db.scalar(select(Submission.id).where(Submission.user_id == guest.id).limit(1)) is None:
        db.delete(guest)
    else:
        guest.end_sessions()  # no copy of the guest's cookie works any more
