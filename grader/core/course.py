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
from typing import Any

import yaml

from grader.core.settings import EXERCISE_MEMORY_MB, EXERCISE_TIME_S, exercises_root

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
CHECK_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
EVIDENCE = ("outside", "learner")
EXPECT_LINE = re.compile(r"^#\s*expect-fail:\s*(.*)$", re.MULTILINE)
ORDER_PREFIX = re.compile(r"^\d+[a-z]?[-_]")  # "04-" (or "04b-") in 04-meet-autocast.md: order, not identity
RESERVED_STEP_IDS = ("end",)  # /lessons/<lesson>/end is the lesson's completion page
EXPECT_SKIP_LINE = re.compile(r"^#\s*expect-skip:\s*(.*)$", re.MULTILINE)


class CourseError(Exception):
    """The course files are malformed; the message names the file and the problem."""


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    # Revealed one at a time, on request, after the check failed. exercise.yaml gives `hints: [...]` or
    # one `hint:` (a one-item list): one schema for every hint, which a translation can follow item by item.
    hints: tuple[str, ...]
    # Where the verdict's deciding numbers come from (docs/threat-model.md): "outside" when the grading
    # process compares them with a recomputation of its own; "learner" when the verdict rests only on
    # what was recorded inside the learner's process, which `evidence_why` then justifies.
    evidence: str = "learner"
    evidence_why: str = ""
    # Checks whose failure explains this one's: when this check fails after one of them failed, the
    # result reports it "skipped" because of that one (one mistake, one message).
    after: tuple[str, ...] = ()

    @property
    def hint(self) -> str:
        """The first hint: the one a check's own message may replace (grader/harness/checking.py)."""
        return self.hints[0]


@dataclass(frozen=True)
class Mistake:
    path: Path
    expect_fail: frozenset[str]
    description: str
    expect_skip: frozenset[str] | None = None  # declared: exactly these are skipped; None: not checked


@dataclass(frozen=True)
class Exercise:
    id: str  # "<lesson>/<slug>"
    path: Path
    title: str
    entry: str
    params: tuple[str, ...]
    prompt: str
    time_limit_s: float
    memory_mb: int
    checks: tuple[CheckSpec, ...]
    uses_gpu: bool = True
    cpu_note: str = ""  # shown to learners when graded without a GPU, where it matters to the exercise
    # The reference solution (solution.py with solution.md) is offered after a passing submission, or
    # after this many submissions when set (`solution_after:` in exercise.yaml).
    solution_after: int | None = None

    @property
    def lesson_id(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def checks_dir(self) -> Path:
        return self.path / "checks"

    @property
    def course_root(self) -> Path:
        """The course folder that holds this exercise (<course>/<lesson>/<exercise>), resolved."""
        return self.path.resolve().parent.parent

    @property
    def solution_path(self) -> Path:
        return self.path / "solution.py"

    @property
    def example_path(self) -> Path:
        """`example.py`: `example(device)` builds the small inputs a Run calls the learner's function with."""
        return self.path / "example.py"

    def solution_code(self) -> str:
        return self.solution_path.read_text(encoding="utf-8")

    def solution_markdown(self) -> str:
        """solution.md: a short explanation of the reference solution ("" when the folder has none)."""
        path = self.path / "solution.md"
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def starter_code(self) -> str:
        return (self.path / "starter.py").read_text(encoding="utf-8")

    def mistakes(self) -> list[Mistake]:
        found = []
        for path in sorted((self.path / "mistakes").glob("*.py")):
            text = path.read_text(encoding="utf-8")
            match = EXPECT_LINE.search(text)
            if not match:
                raise CourseError(f"{path}: a mistake must declare '# expect-fail: <check-id>, ...'")
            ids = frozenset(part.strip() for part in match.group(1).split(",") if part.strip())
            skip_match = EXPECT_SKIP_LINE.search(text)
            skips = frozenset(p.strip() for p in skip_match.group(1).split(",") if p.strip()) if skip_match else None
            unknown = (ids | (skips or frozenset())) - {c.id for c in self.checks}
            if unknown:
                raise CourseError(f"{path}: expect-fail/expect-skip name unknown checks {sorted(unknown)}")
            doc = re.search(r"^#\s*mistake:\s*(.*)$", text, re.MULTILINE)
            found.append(Mistake(path, ids, doc.group(1).strip() if doc else path.stem, skips))
        return found


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


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CourseError(f"{path}: file is missing") from None
    except yaml.YAMLError as exc:
        raise CourseError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise CourseError(f"{path}: expected a mapping at the top level")
    return data


def _require(data: dict[str, Any], key: str, path: Path, kind: type = str) -> Any:
    if key not in data:
        raise CourseError(f"{path}: missing required key '{key}'")
    value = data[key]
    if not isinstance(value, kind):
        raise CourseError(f"{path}: '{key}' must be a {kind.__name__}")
    return value


def load_exercise(path: Path, exercise_id: str, *, authoring_files: bool = True) -> Exercise:
    """One exercise folder. `authoring_files=False` skips starter/solution, which the sandbox image lacks."""
    meta_path = path / "exercise.yaml"
    meta = _read_yaml(meta_path)
    checks = []
    for raw in _require(meta, "checks", meta_path, list):
        if not isinstance(raw, dict):
            raise CourseError(f"{meta_path}: each check needs id, title and hint")
        check_id = _require(raw, "id", meta_path)
        if not CHECK_ID.match(check_id):
            raise CourseError(f"{meta_path}: check id '{check_id}' must be lower-case-with-dashes")
        evidence = _require(raw, "evidence", meta_path)
        if evidence not in EVIDENCE:
            raise CourseError(f"{meta_path}: check '{check_id}': evidence must be one of {', '.join(EVIDENCE)}")
        why = str(raw.get("evidence_why", "")).strip()
        if evidence == "learner" and not why:
            raise CourseError(f"{meta_path}: check '{check_id}' rests on evidence from the learner's process: "
                              f"say why that is acceptable in 'evidence_why'")
        after = raw.get("after", []) or []
        if not isinstance(after, list) or any(a not in {c.id for c in checks} for a in after):
            raise CourseError(f"{meta_path}: check '{check_id}': 'after' must list ids of checks declared "
                              f"before it (got {after!r})")
        checks.append(CheckSpec(check_id, _require(raw, "title", meta_path), _hints(raw, check_id, meta_path),
                                evidence, why, tuple(after)))
    if len({c.id for c in checks}) != len(checks):
        raise CourseError(f"{meta_path}: check ids must be unique")
    limits = meta.get("limits", {}) or {}
    for required in ("starter.py", "solution.py") if authoring_files else ():
        if not (path / required).is_file():
            raise CourseError(f"{path / required}: file is missing")
    if not any((path / "checks").glob("test_*.py")):
        raise CourseError(f"{path / 'checks'}: no pytest check files (test_*.py)")
    return Exercise(
        id=exercise_id,
        path=path,
        title=_require(meta, "title", meta_path),
        entry=_require(meta, "entry", meta_path),
        params=tuple(str(p) for p in meta.get("params", []) or []),
        prompt=str(meta.get("prompt", "")),
        time_limit_s=float(limits.get("time_s", EXERCISE_TIME_S)),
        memory_mb=int(limits.get("memory_mb", EXERCISE_MEMORY_MB)),
        checks=tuple(checks),
        uses_gpu=bool(meta.get("gpu", True)),
        cpu_note=str(meta.get("cpu_note", "") or "").strip(),
        solution_after=_solution_after(meta, meta_path),
    )


def _hints(raw: dict[str, Any], check_id: str, meta_path: Path) -> tuple[str, ...]:
    """`hints: [...]` (revealed one by one), or one `hint:`; not both."""
    if ("hint" in raw) == ("hints" in raw):
        raise CourseError(f"{meta_path}: check '{check_id}' needs 'hints: [...]' or one 'hint:' (not both)")
    hints = raw["hints"] if "hints" in raw else [raw["hint"]]
    if not isinstance(hints, list) or not hints or not all(isinstance(h, str) and h.strip() for h in hints):
        raise CourseError(f"{meta_path}: check '{check_id}': 'hints' must be a list of one or more texts")
    return tuple(h.strip() for h in hints)


def _solution_after(meta: dict[str, Any], meta_path: Path) -> int | None:
    value = meta.get("solution_after")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise CourseError(f"{meta_path}: 'solution_after' must be a number of submissions (1 or more)")
    return value


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
