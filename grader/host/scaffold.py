"""`grader new LESSON/EXERCISE [--from EXISTING]`: start an exercise folder that validates at once.

Without --from it copies grader/host/templates/exercise/: one plain training step, one real check
(`matches-reference`, evidence from outside the learner's process) and one mistake that fails it. With
--from it copies an existing exercise (its checks, mistakes, starter and solution) under the new id.
Either way `grader validate exercises/LESSON/EXERCISE` passes before anything is edited.

lesson.yaml is left alone, on purpose: a listed exercise is shown to learners at the next content
reload, and a scaffold is not ready for them; where it belongs among the lesson's cards is the author's
call. `NewExercise.lesson_line` is the line to add when it is.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from grader.core.course import SLUG, Course, Exercise

TEMPLATE = Path(__file__).parent / "templates" / "exercise"
# What a copy leaves behind: bytecode and editors' leftovers are not part of an exercise.
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*~", ".*.swp")


class ScaffoldError(Exception):
    """The new exercise cannot be made; the message says why, in plain words."""


@dataclass(frozen=True)
class NewExercise:
    id: str
    path: Path
    source: Path  # what was copied: the template or the --from exercise's folder

    @property
    def lesson_line(self) -> str:
        return f"  - exercise: {self.id.split('/', 1)[1]}"


def parse_id(exercise_id: str) -> tuple[str, str]:
    lesson, sep, name = exercise_id.partition("/")
    if not sep or not SLUG.match(lesson) or not SLUG.match(name):
        raise ScaffoldError(f"'{exercise_id}' is not an exercise id: write LESSON/EXERCISE, both "
                            "lower-case-with-dashes (e.g. mixed-precision/clip-after-unscale)")
    return lesson, name


def new_exercise(course: Course, exercise_id: str, source: Exercise | None = None) -> NewExercise:
    """Copy the template (or `source`) to exercises/LESSON/EXERCISE; refuse rather than overwrite."""
    lesson_id, name = parse_id(exercise_id)
    try:
        lesson = course.lesson(lesson_id)
    except KeyError:
        known = ", ".join(lesson.id for lesson in course.lessons)
        raise ScaffoldError(f"there is no lesson '{lesson_id}' in {course.root / 'course.yaml'} "
                            f"(lessons: {known})") from None
    target = course.root / lesson.id / name
    if target.exists():
        raise ScaffoldError(f"{target} already exists: choose another name, or remove it first")
    origin = source.path if source is not None else TEMPLATE
    shutil.copytree(origin, target, ignore=IGNORED)
    if source is not None:
        # The checks' docstrings name the exercise they were written for; say which one this copy is.
        _rename_id_in(target, source.id, exercise_id)
    return NewExercise(exercise_id, target, origin)


def _rename_id_in(folder: Path, old: str, new: str) -> None:
    pattern = re.compile(rf"(?<![\w/-]){re.escape(old)}(?![\w/-])")
    for path in (folder / "checks").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        if pattern.search(text):
            path.write_text(pattern.sub(new, text), encoding="utf-8")


__all__ = ["NewExercise", "ScaffoldError", "TEMPLATE", "new_exercise", "parse_id"]
