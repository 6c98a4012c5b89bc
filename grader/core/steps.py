"""The kinds of step a lesson.yaml lists, one class each, in one registry (`STEP_KINDS`: kind -> class).

Each class loads its step (`load`), names it (`default_id`), says what its page shows (`page_markdown`),
whether a learner is done with it (`done`), and reads its own translation file (`load_text`: a CardText,
QuizText or ExerciseText, each with the `title` and `prose` a page in that language shows). Code that
handles every kind calls these, never a chain of isinstance checks.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Union

from grader.core import coursefiles
from grader.core.coursefiles import CourseError
from grader.core.exercise import Exercise, load_exercise

ORDER_PREFIX = re.compile(r"^\d+[a-z]?[-_]")  # "04-" (or "04b-") in 04-meet-autocast.md: order, not identity


def _without_order(ref: str) -> str:
    """The file name without its order prefix and suffix: 04-meet-autocast.md -> meet-autocast."""
    return ORDER_PREFIX.sub("", Path(ref).stem)


@dataclass(frozen=True)
class Progress:
    """What one learner has done in one lesson, as the steps read it to say whether they are done (the web
    app fills it from its tables). Keyed by ids, never by position: inserting or moving a step changes
    nothing a learner has done."""
    seen: set[str]  # ids of the steps whose page the learner opened
    passed: set[str]  # exercise ids with a passing submission
    correct: set[str]  # quiz question ids answered correctly


# A step's text in one language: only what its file gives (None: shown in English); `kind` is its step's.
@dataclass(frozen=True)
class CardText:
    title: str
    markdown: str
    kind: ClassVar[str] = "card"

    @property
    def prose(self) -> str | None:
        return self.markdown


@dataclass
class QuestionText:
    """One quiz question in one language; options by their (unchanged) id: {"text": ..., "explanation": ...}."""
    question: str | None = None
    options: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class QuizText:
    title: str | None = None
    questions: dict[str, QuestionText] = field(default_factory=dict)  # by the English question's id
    kind: ClassVar[str] = "quiz"
    prose: ClassVar[None] = None  # the page lays out the questions itself


@dataclass(frozen=True)
class ExerciseText:
    title: str | None
    prompt: str | None
    checks: dict[str, dict[str, Any]]  # check id -> {"title": ..., "hints": [...]}, as the file gives them
    kind: ClassVar[str] = "exercise"

    @property
    def prose(self) -> str | None:
        return self.prompt


StepText = Union[CardText, QuizText, ExerciseText]


@dataclass(frozen=True)
class Card:
    title: str
    markdown: str
    kind: str = "card"
    id: str = ""  # the step id (load_lesson sets it)
    ref: str = ""  # what lesson.yaml names: the card's file under cards/

    @classmethod
    def load(cls, lesson_dir: Path, ref: str, meta_path: Path) -> Card:
        path = lesson_dir / "cards" / ref
        try:
            title, markdown = _card_file(path, "a card must start with a '# Title' line")
        except FileNotFoundError:
            raise CourseError(f"{path}: card file is missing") from None
        return cls(title, markdown, ref=ref)

    default_id = staticmethod(_without_order)

    def page_markdown(self) -> str | None:
        return self.markdown

    def done(self, progress: Progress) -> bool:
        """A card is done once seen."""
        return self.id in progress.seen

    def load_text(self, lesson_dir: Path, language: str) -> CardText | None:
        """cards/<language>/<the English card's file name>."""
        path = lesson_dir / "cards" / language / Path(self.ref).name
        if not path.is_file():
            return None
        return CardText(*_card_file(path, "a translated card starts with its '# Title' line, as the English "
                                          "one does"))


def _card_file(path: Path, mistake: str) -> tuple[str, str]:
    first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    if not first.startswith("# ") or not first[2:].strip():
        raise CourseError(f"{path}: {mistake}")
    return first[2:].strip(), rest.strip() + "\n"


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
    ref: str = ""  # the quiz file in the lesson's folder

    @classmethod
    def load(cls, lesson_dir: Path, ref: str, meta_path: Path) -> Quiz:
        path = lesson_dir / ref
        data = coursefiles.read(path, "quiz")
        assert data is not None
        questions = []
        for number, raw in enumerate(data["questions"], start=1):
            options = tuple(QuizOption(o["text"], o["correct"], o["explanation"], str(o.get("id", position)),
                                       o["pin"]) for position, o in enumerate(raw["options"], start=1))
            if sum(o.correct for o in options) != 1:
                raise CourseError(f"{path}: question {number} must have exactly one option with 'correct: true'")
            if len({o.id for o in options}) != len(options):
                raise CourseError(f"{path}: question {number}: two options have the same id")
            questions.append(QuizQuestion(raw.get("id", f"q{number}"), raw["question"], options))
        return cls(data["title"], tuple(questions), ref=ref)

    default_id = staticmethod(_without_order)

    def page_markdown(self) -> str | None:
        return None  # the page lays out the questions itself

    def done(self, progress: Progress) -> bool:
        return all(q.id in progress.correct for q in self.questions)

    def load_text(self, lesson_dir: Path, language: str) -> QuizText | None:
        """quiz.<language>.yaml, checked against this quiz: every id it names must be one of this quiz's."""
        path = lesson_dir / f"{Path(self.ref).stem}.{language}.yaml"
        data = coursefiles.read(path, "quiz.translation", optional=True)
        if data is None:
            return None
        english = {question.id: question for question in self.questions}
        text = QuizText(data.get("title") or None)
        for raw in data["questions"] or []:
            question = english.get(str(raw["id"]))
            where = f"{path}: question '{raw['id']}'"
            if question is None:
                raise CourseError(f"{where} is not a question of the English quiz ({', '.join(english)})")
            if question.id in text.questions:
                raise CourseError(f"{where} is translated twice")
            known = [option.id for option in question.options]
            unknown = [option_id for option_id in raw["options"] or {} if option_id not in known]
            if unknown:
                raise CourseError(f"{where}: option '{unknown[0]}' is not one of its options ({', '.join(known)})")
            options = {option_id: {key: value for key, value in entry.items() if value}
                       for option_id, entry in (raw["options"] or {}).items()}
            text.questions[question.id] = QuestionText(raw.get("question") or None, options)
        return text


@dataclass(frozen=True)
class ExerciseStep:
    exercise: Exercise
    kind: str = "exercise"
    id: str = ""
    ref: str = ""  # the exercise's folder in the lesson's folder

    @property
    def title(self) -> str:
        return self.exercise.title

    @classmethod
    def load(cls, lesson_dir: Path, ref: str, meta_path: Path) -> ExerciseStep:
        return cls(load_exercise(lesson_dir / ref, f"{lesson_dir.name}/{ref}"), ref=ref)

    @staticmethod
    def default_id(ref: str) -> str:
        return str(ref)  # the folder's name, which is also the exercise's id in its lesson

    def page_markdown(self) -> str | None:
        return self.exercise.prompt

    def done(self, progress: Progress) -> bool:
        return self.exercise.id in progress.passed

    def load_text(self, lesson_dir: Path, language: str) -> ExerciseText | None:
        """exercise.<language>.yaml beside exercise.yaml; every check it names must be one of the exercise's."""
        path = Path(self.exercise.path) / f"exercise.{language}.yaml"
        data = coursefiles.read(path, "exercise.translation", optional=True)
        if data is None:
            return None
        known = [check.id for check in self.exercise.checks]
        for check_id in data["checks"] or {}:
            if check_id not in known:
                raise CourseError(f"{path}: check '{check_id}' is not one of the exercise's ({', '.join(known)})")
        return ExerciseText(data.get("title") or None, data.get("prompt") or None, dict(data["checks"] or {}))


Step = Union[Card, Quiz, ExerciseStep]
# The kinds of step a lesson.yaml may list (`- card: FILE`), each the class that loads it, names it, shows it
# and reads its translations. The web app's registry of pages (academy/web/lessons.py, STEP_PAGES) has one
# entry per class here; its test holds the two together.
STEP_KINDS: dict[str, type[Card] | type[Quiz] | type[ExerciseStep]] = {
    "card": Card, "exercise": ExerciseStep, "quiz": Quiz,
}
