"""What a learner has done: read cards, passed exercises, answered quizzes, and where to resume.

Everything is keyed by ids (steps, exercises, questions), never by position, so an instructor may insert,
remove or reorder steps: nothing unread becomes done and nothing done is lost.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from academy.db import get_session
from academy.models import LessonProgress, QuizAnswer, StepVisit, Submission, User
from grader.course import Lesson, Progress


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
    row = get_position(user, lesson_id)
    changed = False
    if row is None:
        db.add(LessonProgress(user_id=user.id, lesson_id=lesson_id, step_id=step_id))
        changed = True
    elif row.step_id != step_id:
        row.step_id, changed = step_id, True
    if step_id not in seen_steps(user, lesson_id):
        db.add(StepVisit(user_id=user.id, lesson_id=lesson_id, step_id=step_id))
        changed = True
    if not changed:
        return
    try:
        db.commit()
    except IntegrityError:  # the same page opened twice at once (two tabs): the other request stored it
        db.rollback()


def lesson_status(user: User | None, lesson: Lesson, passed: set[str] | None = None) -> LessonStatus:
    if user is None:
        return LessonStatus(lesson, tuple(False for _ in lesson.steps), 1)
    passed = passed_exercises(user) if passed is None else passed
    correct = correct_answers(user, lesson.id) if lesson.quiz else set()
    facts = Progress(seen_steps(user, lesson.id), passed, correct)
    return LessonStatus(lesson, tuple(step.done(facts) for step in lesson.steps), resume_number(user, lesson))


def course_status(user: User | None, lessons: list[Lesson]) -> list[LessonStatus]:
    passed = passed_exercises(user) if user else set()
    return [lesson_status(user, lesson, passed) for lesson in lessons]
