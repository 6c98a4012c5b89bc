"""What a learner has done: read cards, passed exercises, answered quizzes, and where to resume."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from academy.db import get_session
from academy.models import LessonProgress, QuizAnswer, Submission, User
from grader.course import Lesson, Progress


@dataclass(frozen=True)
class LessonStatus:
    lesson: Lesson
    done: tuple[bool, ...]  # one per step
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

    def as_json(self) -> dict:
        return {"lesson": self.lesson.id, "title": self.lesson.title, "steps_done": self.done_count,
                "steps": self.total, "percent": self.percent, "resume_step": self.position,
                "done": list(self.done)}


def passed_exercises(user: User) -> set[str]:
    return set(get_session().scalars(select(Submission.exercise_id).distinct()
                                     .where(Submission.user_id == user.id, Submission.passed.is_(True))))


def correct_answers(user: User, lesson_id: str) -> set[str]:
    return set(get_session().scalars(select(QuizAnswer.question_id).distinct().where(
        QuizAnswer.user_id == user.id, QuizAnswer.lesson_id == lesson_id, QuizAnswer.correct.is_(True))))


def get_position(user: User, lesson_id: str) -> LessonProgress | None:
    return get_session().scalar(select(LessonProgress).where(LessonProgress.user_id == user.id,
                                                             LessonProgress.lesson_id == lesson_id))


def record_visit(user: User, lesson_id: str, number: int) -> None:
    db = get_session()
    row = get_position(user, lesson_id)
    if row is None:
        row = LessonProgress(user_id=user.id, lesson_id=lesson_id, position=number, furthest=number)
        db.add(row)
    elif row.position != number or row.furthest < number:
        row.position, row.furthest = number, max(row.furthest, number)
    else:
        return
    db.commit()


def lesson_status(user: User | None, lesson: Lesson, passed: set[str] | None = None) -> LessonStatus:
    if user is None:
        return LessonStatus(lesson, tuple(False for _ in lesson.steps), 1)
    passed = passed_exercises(user) if passed is None else passed
    row = get_position(user, lesson.id)
    furthest = row.furthest if row else 0
    correct = correct_answers(user, lesson.id) if lesson.quiz else set()
    facts = Progress(furthest, passed, correct)
    done = tuple(step.done(number, facts) for number, step in enumerate(lesson.steps, 1))
    return LessonStatus(lesson, done, row.position if row else 1)


def course_status(user: User | None, lessons: list[Lesson]) -> list[LessonStatus]:
    passed = passed_exercises(user) if user else set()
    return [lesson_status(user, lesson, passed) for lesson in lessons]
