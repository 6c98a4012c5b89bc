"""The course as files: load `exercises/` into plain objects.

Layout (see README, "For instructors"):

    exercises/course.yaml                 title + ordered list of lesson folders
    exercises/<lesson>/lesson.yaml        title, summary, ordered steps
    exercises/<lesson>/cards/*.md         step cards: first line "# Title", then Markdown
    exercises/<lesson>/quiz.yaml          quick-check questions
    exercises/<lesson>/<exercise>/        exercise.yaml, starter.py, solution.py,
                                          checks/ (probe.py + pytest files), mistakes/*.py

Nothing here imports torch: the web app and the CLI load the course cheaply.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from grader.core.exercise import (
    CHECK_ID,
    CheckSpec,
    CourseError,
    Exercise,
    Mistake,
    _read_yaml,
    _require,
    load_exercise,
)
from grader.core.settings import exercises_root

__all__ = ["Course", "CourseError", "Lesson", "Card", "Quiz", "QuizOption", "QuizQuestion", "ExerciseStep", "Progress",
           "Step", "CheckSpec", "Exercise", "Mistake", "load_course", "load_lesson", "load_exercise"]

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
ORDER_PREFIX = re.compile(r"^\d+[a-z]?[-_]")  # "04-" (or "04b-") in 04-meet-autocast.md: order, not identity
RESERVED_STEP_IDS = ("end",)  # /lessons/<lesson>/end is the lesson's completion page


@dataclass(frozen=True)
class Progress:
    """What one learner has done in one lesson, as the steps read it to say whether they are done (the web
    app fills it from its tables). Keyed by ids, never by position: inserting or moving a step changes
    nothing a learner has done."""
    seen: set[str]  # ids of the steps whose page the learner opened
    passed: set[str]  # exercise ids with a passing submission
    correct: set[str]  # quiz question ids answered correctly


@dataclass(frozen=True)
class Card:
    title: str
    markdown: str
    kind: str = "card"
    id: str = ""  # the step id (load_lesson sets it)

    @classmethod
    def load(cls, lesson_dir: Path, ref: str, meta_path: Path) -> Card:
        return _load_card(lesson_dir / "cards" / ref)

    @staticmethod
    def default_id(ref: str) -> str:
        """The file name without its order prefix and suffix: 04-meet-autocast.md -> meet-autocast."""
        return ORDER_PREFIX.sub("", Path(ref).stem)

    def page_markdown(self) -> str | None:
        return self.markdown

    def done(self, progress: Progress) -> bool:
        """A card is done once seen."""
        return self.id in progress.seen


@dataclass(frozen=True)
class QuizOption:
    text: str
    correct: bool
    explanation: str
    # Stable across reordering: answers are stored by it. Default: the option's 1-based position ("1", "2",
    # ...), so an instructor who reorders options gives each the id of its old position.
    id: str = ""
    pinned: bool = False  # `pin: true`: keeps its position when the options are shuffled ("All of the above")


@dataclass(frozen=True)
class QuizQuestion:
    id: str
    question: str
    options: tuple[QuizOption, ...]

    @property
    def answer(self) -> int:
        return next(i for i, o in enumerate(self.options) if o.correct)

    @property
    def answer_id(self) -> str:
        return self.options[self.answer].id

    def option(self, option_id: str) -> QuizOption:
        """The option with this id; KeyError when there is none."""
        for option in self.options:
            if option.id == option_id:
                return option
        raise KeyError(option_id)

    def shuffled(self, salt: str) -> tuple[QuizOption, ...]:
        """The options in an order fixed by `salt` (a learner's): the same learner always sees the same order,
        another learner most likely another. Pinned options keep their position."""
        import hashlib

        def key(option: QuizOption) -> str:
            return hashlib.sha256(f"{salt}|{self.id}|{option.id}".encode()).hexdigest()

        loose = iter(sorted((o for o in self.options if not o.pinned), key=key))
        return tuple(o if o.pinned else next(loose) for o in self.options)


@dataclass(frozen=True)
class Quiz:
    title: str
    questions: tuple[QuizQuestion, ...]
    kind: str = "quiz"
    id: str = ""

    @classmethod
    def load(cls, lesson_dir: Path, ref: str, meta_path: Path) -> Quiz:
        return _load_quiz(lesson_dir / ref)

    @staticmethod
    def default_id(ref: str) -> str:
        return ORDER_PREFIX.sub("", Path(ref).stem)

    def page_markdown(self) -> str | None:
        return None  # the page lays out the questions itself

    def done(self, progress: Progress) -> bool:
        return all(q.id in progress.correct for q in self.questions)


@dataclass(frozen=True)
class ExerciseStep:
    exercise: Exercise
    kind: str = "exercise"
    id: str = ""

    @property
    def title(self) -> str:
        return self.exercise.title

    @classmethod
    def load(cls, lesson_dir: Path, ref: str, meta_path: Path) -> ExerciseStep:
        if not SLUG.match(str(ref)):
            raise CourseError(f"{meta_path}: exercise folder '{ref}' must be lower-case-with-dashes")
        return cls(load_exercise(lesson_dir / ref, f"{lesson_dir.name}/{ref}"))

    @staticmethod
    def default_id(ref: str) -> str:
        return str(ref)  # the folder's name, which is also the exercise's id in its lesson

    def page_markdown(self) -> str | None:
        return self.exercise.prompt

    def done(self, progress: Progress) -> bool:
        return self.exercise.id in progress.passed


Step = Card | Quiz | ExerciseStep
# The kinds of step a lesson.yaml may list (`- card: FILE`), each the class that loads it and names it.
STEP_KINDS: dict[str, type[Card] | type[Quiz] | type[ExerciseStep]] = {
    "card": Card, "exercise": ExerciseStep, "quiz": Quiz,
}


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


def _load_card(path: Path) -> Card:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CourseError(f"{path}: card file is missing") from None
    first, _, rest = text.partition("\n")
    if not first.startswith("# "):
        raise CourseError(f"{path}: a card must start with a '# Title' line")
    return Card(first[2:].strip(), rest.strip() + "\n")


def _load_quiz(path: Path) -> Quiz:
    data = _read_yaml(path)
    questions = []
    for i, raw in enumerate(_require(data, "questions", path, list)):
        options = []
        for position, opt in enumerate(_require(raw, "options", path, list), start=1):
            option_id = str(opt.get("id", position))
            if not CHECK_ID.match(option_id):
                raise CourseError(f"{path}: question {i + 1}: option id '{option_id}' must be lower-case-with-dashes")
            options.append(QuizOption(str(_require(opt, "text", path)), bool(opt.get("correct", False)),
                                      str(_require(opt, "explanation", path)), option_id, bool(opt.get("pin", False))))
        if sum(o.correct for o in options) != 1:
            raise CourseError(f"{path}: question {i + 1} must have exactly one option with 'correct: true'")
        if len({o.id for o in options}) != len(options):
            raise CourseError(f"{path}: question {i + 1}: two options have the same id")
        questions.append(QuizQuestion(str(raw.get("id", f"q{i + 1}")), _require(raw, "question", path),
                                      tuple(options)))
    return Quiz(str(data.get("title", "Quick Check")), tuple(questions))


def load_lesson(path: Path, number: int) -> Lesson:
    meta_path = path / "lesson.yaml"
    meta = _read_yaml(meta_path)
    steps: list[Step] = []
    for raw in _require(meta, "steps", meta_path, list):
        kinds = [key for key in raw if key != "id"] if isinstance(raw, dict) else []
        if len(kinds) != 1 or len(raw) - len(kinds) > 1:
            raise CourseError(f"{meta_path}: each step is one of 'card: FILE', 'exercise: FOLDER', 'quiz: FILE', "
                              "optionally with 'id: STEP-ID'")
        kind, ref = kinds[0], raw[kinds[0]]
        step_kind = STEP_KINDS.get(kind)
        if step_kind is None:
            raise CourseError(f"{meta_path}: unknown step kind '{kind}'")
        step_id = str(raw.get("id") or step_kind.default_id(str(ref)))
        if not SLUG.match(step_id) or step_id.isdigit():
            raise CourseError(f"{meta_path}: step id '{step_id}' (of {kind} {ref}) must be lower-case-with-dashes "
                              "and not only digits: set 'id:' on the step")
        if step_id in RESERVED_STEP_IDS:
            raise CourseError(f"{meta_path}: step id '{step_id}' (of {kind} {ref}) is the lesson's end page: "
                              "set another 'id:' on the step")
        if step_id in {s.id for s in steps}:
            raise CourseError(f"{meta_path}: two steps have the id '{step_id}': give one an 'id:' of its own")
        steps.append(dataclasses.replace(step_kind.load(path, ref, meta_path), id=step_id))
    return Lesson(path.name, number, _require(meta, "title", meta_path), str(meta.get("summary", "")),
                  tuple(steps))


def load_course(root: Path | None = None) -> Course:
    """Load and validate the whole course; raises CourseError with the offending file."""
    root = Path(root) if root else exercises_root()
    manifest_path = root / "course.yaml"
    manifest = _read_yaml(manifest_path)
    course = Course(root, _require(manifest, "title", manifest_path), str(manifest.get("summary", "")))
    for number, lesson_id in enumerate(_require(manifest, "lessons", manifest_path, list), start=1):
        if not SLUG.match(str(lesson_id)) or not (root / lesson_id).is_dir():
            raise CourseError(f"{manifest_path}: lesson '{lesson_id}' is not a folder under {root}")
        course.lessons.append(load_lesson(root / lesson_id, number))
    return course
