"""The course as files: load `exercises/` into plain objects.

Layout (see README, "For instructors"; each file's keys: schemas/*.json, tabled in docs/authoring.md):

    exercises/course.yaml                 title + ordered list of lesson folders
    exercises/<lesson>/lesson.yaml        title, summary, ordered steps
    exercises/<lesson>/cards/*.md         step cards: first line "# Title", then Markdown
    exercises/<lesson>/quiz.yaml          quick-check questions
    exercises/<lesson>/<exercise>/        exercise.yaml, starter.py, solution.py,
                                          checks/ (probe.py + pytest files), mistakes/*.py
    ...<lang>.yaml, cards/<lang>/         the translations: grader/core/translations.py

Every YAML file is read by coursefiles.read against its schema; the kinds of step are steps.STEP_KINDS.
Nothing here imports torch: the web app and the CLI load the course cheaply.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from grader.core import coursefiles
from grader.core.exercise import CheckSpec, CourseError, Exercise, Mistake, load_exercise
from grader.core.settings import exercises_root
from grader.core.steps import (
    STEP_KINDS,
    Card,
    ExerciseStep,
    Progress,
    Quiz,
    QuizOption,
    QuizQuestion,
    Step,
)

__all__ = ["Course", "CourseError", "Lesson", "Card", "Quiz", "QuizOption", "QuizQuestion", "ExerciseStep", "Progress",
           "STEP_KINDS", "Step", "CheckSpec", "Exercise", "Mistake", "load_course", "load_lesson", "load_exercise"]

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
RESERVED_STEP_IDS = ("end",)  # /lessons/<lesson>/end is the lesson's completion page


@dataclass(frozen=True)
class Lesson:
    id: str
    number: int
    title: str
    summary: str
    steps: tuple[Step, ...]

    @property
    def exercises(self) -> list[Exercise]:
        return [s.exercise for s in self.steps if isinstance(s, ExerciseStep)]

    @property
    def quiz(self) -> Quiz | None:
        return next((s for s in self.steps if isinstance(s, Quiz)), None)

    def step(self, step_id: str) -> Step:
        """The step with this id; KeyError when there is none."""
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    def index(self, step_id: str) -> int:
        """The 0-based position of a step; KeyError when there is none."""
        if step_id not in self.step_ids:
            raise KeyError(step_id)
        return self.step_ids.index(step_id)

    @property
    def step_ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.steps)


@dataclass
class Course:
    root: Path
    title: str
    summary: str
    lessons: list[Lesson] = field(default_factory=list)

    @cached_property
    def exercises(self) -> dict[str, Exercise]:
        return {ex.id: ex for lesson in self.lessons for ex in lesson.exercises}

    def lesson(self, lesson_id: str) -> Lesson:
        for lesson in self.lessons:
            if lesson.id == lesson_id:
                return lesson
        raise KeyError(lesson_id)

    def find_exercise(self, ref: str) -> Exercise:
        """An exercise by id ("mixed-precision/amp-step") or by the path of its folder."""
        if ref in self.exercises:
            return self.exercises[ref]
        path = Path(ref)
        if path.is_dir() and (path / "exercise.yaml").is_file():
            resolved = path.resolve()
            for ex in self.exercises.values():
                if ex.path.resolve() == resolved:
                    return ex
            return load_exercise(resolved, f"{resolved.parent.name}/{resolved.name}")
        known = ", ".join(sorted(self.exercises))
        raise KeyError(f"unknown exercise '{ref}' (known: {known})")


def load_lesson(path: Path, number: int) -> Lesson:
    meta_path = path / "lesson.yaml"
    meta = coursefiles.read(meta_path, "lesson")
    assert meta is not None
    steps: list[Step] = []
    for raw in meta["steps"]:
        kinds = [key for key in raw if key != "id"]
        if len(kinds) != 1:
            raise CourseError(f"{meta_path}: each step is one of 'card: FILE', 'exercise: FOLDER', 'quiz: FILE', "
                              "optionally with 'id: STEP-ID'")
        kind, ref = kinds[0], raw[kinds[0]]
        step_kind = STEP_KINDS[kind]
        step_id = raw.get("id") or step_kind.default_id(ref)
        if not SLUG.match(step_id) or step_id.isdigit():
            raise CourseError(f"{meta_path}: step id '{step_id}' (of {kind} {ref}) must be lower-case-with-dashes "
                              "and not only digits: set 'id:' on the step")
        if step_id in RESERVED_STEP_IDS:
            raise CourseError(f"{meta_path}: step id '{step_id}' (of {kind} {ref}) is the lesson's end page: "
                              "set another 'id:' on the step")
        if step_id in {s.id for s in steps}:
            raise CourseError(f"{meta_path}: two steps have the id '{step_id}': give one an 'id:' of its own")
        steps.append(dataclasses.replace(step_kind.load(path, ref, meta_path), id=step_id))
    return Lesson(path.name, number, meta["title"], meta["summary"], tuple(steps))


def load_course(root: Path | None = None) -> Course:
    """Load and validate the whole course; raises CourseError with the offending file."""
    root = Path(root) if root else exercises_root()
    manifest_path = root / "course.yaml"
    manifest = coursefiles.read(manifest_path, "course")
    assert manifest is not None
    course = Course(root, manifest["title"], manifest["summary"])
    for number, lesson_id in enumerate(manifest["lessons"], start=1):
        if not (root / lesson_id).is_dir():
            raise CourseError(f"{manifest_path}: lesson '{lesson_id}' is not a folder under {root}")
        course.lessons.append(load_lesson(root / lesson_id, number))
    return course
