"""The course's translation files, read and validated: `course.<lang>.yaml`, `lesson.<lang>.yaml`,
`cards/<lang>/<card>.md`, `quiz.<lang>.yaml`, `exercise.<lang>.yaml` (docs/course.md); and their coverage."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from academy.i18n.languages import TRANSLATED
from academy.rendering import render_markdown
from grader.core.course import Card, Course, CourseError, ExerciseStep, Lesson, Quiz, Step
from grader.core.exercise import parse_yaml


@dataclass
class Heading:
    """A title and a summary in one language: the course's (`course.<lang>.yaml`) or a lesson's."""
    title: str | None = None
    summary: str | None = None


@dataclass
class QuestionText:
    """One quiz question in one language; options by their (unchanged) id: {"text": ..., "explanation": ...}."""
    question: str | None = None
    options: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class QuizText:
    title: str | None = None
    questions: dict[str, QuestionText] = field(default_factory=dict)  # by the English question's id


@dataclass
class LessonText(Heading):
    """One lesson's translation into one language: only what its files give."""
    cards: dict[str, tuple[str, str]] = field(default_factory=dict)  # step id -> (title, markdown)
    exercises: dict[str, dict[str, Any]] = field(default_factory=dict)  # step id -> exercise.<lang>.yaml
    quiz: QuizText | None = None  # quiz.<lang>.yaml
    html: dict[str, str] = field(default_factory=dict)  # step id -> its card or prompt as safe HTML, rendered once

    def pieces(self, lesson: Lesson) -> tuple[int, int]:
        """(translated, total): the title, the summary and each step count one."""
        done = (self.title is not None) + (self.summary is not None)
        done += sum(STEP_COVERAGE[type(step)](self, step) for step in lesson.steps)
        return done, 2 + len(lesson.steps)

    def prose(self, step: Step) -> str | None:
        """A card's or an exercise prompt's translated markdown, if a file gives it."""
        if isinstance(step, Card):
            return self.cards.get(step.id, (None, None))[1]
        if isinstance(step, ExerciseStep):
            return self.exercises.get(step.id, {}).get("prompt") or None
        return None


# Whether a lesson's translation covers a step, by kind of step (grader.core.course.STEP_KINDS): a card and an
# exercise by their own files, the quiz by the lesson's quiz file.
STEP_COVERAGE: dict[type, Callable[[LessonText, Any], bool]] = {
    Card: lambda text, step: step.id in text.cards,
    ExerciseStep: lambda text, step: step.id in text.exercises,
    Quiz: lambda text, _step: text.quiz is not None,
}


# What each translation file may hold (docs/course.md, "Translations"); anything else is a mistake to report.
HEADING_KEYS = {"title", "summary"}
QUIZ_KEYS, QUESTION_KEYS, OPTION_KEYS = {"title", "questions"}, {"id", "question", "options"}, {"text", "explanation"}
EXERCISE_KEYS, CHECK_KEYS = {"title", "prompt", "checks", "hints"}, {"title", "hints"}


def _mapping(data: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise CourseError(f"{where}: expected a mapping with {', '.join(sorted(allowed))}")
    unknown = sorted(str(key) for key in data if key not in allowed)
    if unknown:
        raise CourseError(f"{where}: unknown key(s) {', '.join(unknown)}; a translation gives "
                          f"{', '.join(sorted(allowed))}")
    return data


def _file(path: Path, allowed: set[str]) -> dict[str, Any] | None:
    """A translation file's mapping, or None where there is no such file."""
    if not path.is_file():
        return None
    try:
        data = parse_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CourseError(f"{path}: not valid YAML: {exc}") from None
    return _mapping(data, allowed, str(path))


def _text(data: dict[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, (dict, list, bool)):
        raise CourseError(f"{where}: '{key}' must be a text")
    return str(value)


def _heading(path: Path) -> dict[str, str | None]:
    data = _file(path, HEADING_KEYS) or {}
    return {key: _text(data, key, str(path)) for key in HEADING_KEYS}


def _card(path: Path) -> tuple[str, str]:
    first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    if not first.startswith("# ") or not first[2:].strip():
        raise CourseError(f"{path}: a translated card starts with its '# Title' line, as the English one does")
    return first[2:].strip(), rest.strip() + "\n"


def _quiz(path: Path, quiz: Quiz) -> QuizText | None:
    """quiz.<lang>.yaml, checked against the English quiz: every id it names must be one of that quiz's."""
    data = _file(path, QUIZ_KEYS)
    if data is None:
        return None
    raw_questions = data.get("questions") or []
    if not isinstance(raw_questions, list):
        raise CourseError(f"{path}: 'questions' must be a list of questions with their ids")
    english = {question.id: question for question in quiz.questions}
    text = QuizText(_text(data, "title", str(path)))
    for raw in raw_questions:
        raw = _mapping(raw, QUESTION_KEYS, f"{path}: each question")
        question = english.get(str(raw.get("id")))
        where = f"{path}: question '{raw.get('id')}'"
        if question is None:
            raise CourseError(f"{where} is not a question of the English quiz ({', '.join(english)})")
        if question.id in text.questions:
            raise CourseError(f"{where} is translated twice")
        options = raw.get("options") or {}
        if not isinstance(options, dict):
            raise CourseError(f"{where}: 'options' must map each option's id to its text and explanation")
        known = [option.id for option in question.options]
        translated: dict[str, dict[str, str]] = {}
        for option_id, entry in options.items():
            if str(option_id) not in known:
                raise CourseError(f"{where}: option '{option_id}' is not one of its options ({', '.join(known)})")
            entry = _mapping(entry, OPTION_KEYS, f"{where}, option '{option_id}'")
            translated[str(option_id)] = {key: value for key in OPTION_KEYS
                                          if (value := _text(entry, key, f"{where}, option '{option_id}'"))}
        text.questions[question.id] = QuestionText(_text(raw, "question", where), translated)
    return text


def _exercise(path: Path, step: ExerciseStep) -> dict[str, Any] | None:
    data = _file(path, EXERCISE_KEYS)
    if data is None:
        return None
    for key in ("title", "prompt"):
        _text(data, key, str(path))
    checks = data.get("checks") or {}
    if not isinstance(checks, dict):
        raise CourseError(f"{path}: 'checks' must map each check's id to its title")
    known = [check.id for check in step.exercise.checks]
    for check_id, entry in checks.items():
        if check_id not in known:
            raise CourseError(f"{path}: check '{check_id}' is not one of the exercise's ({', '.join(known)})")
        _text(_mapping(entry, CHECK_KEYS, f"{path}: check '{check_id}'"), "title", f"{path}: check '{check_id}'")
    return data


def load_course_translations(course: Course) -> dict[str, Heading]:
    """Language -> the course's title and summary in it (`course.<lang>.yaml` next to course.yaml)."""
    return {language: Heading(**_heading(Path(course.root) / f"course.{language}.yaml")) for language in TRANSLATED}


def load_translations(course: Course) -> dict[tuple[str, str], LessonText]:
    """(lesson id, language) -> LessonText, for every lesson and every language other than English. Raises
    CourseError, naming the file, where a translation file is malformed or names what the English lacks.
    Cards and prompts are rendered here, once per (re)load, like the English ones (academy.content)."""

    texts: dict[tuple[str, str], LessonText] = {}
    for lesson in course.lessons:
        folder = Path(course.root) / lesson.id
        refs = [next(v for k, v in raw.items() if k != "id")
                for raw in (parse_yaml((folder / "lesson.yaml").read_text()) or {}).get("steps", [])]
        cards = {Path(str(ref)).name: step for ref, step in zip(refs, lesson.steps) if isinstance(step, Card)}
        for language in TRANSLATED:
            text = LessonText(**_heading(folder / f"lesson.{language}.yaml"))
            for path in sorted((folder / "cards" / language).glob("*.md")):
                if not (folder / "cards" / path.name).is_file():  # a misspelt name; an unlisted card is fine
                    raise CourseError(f"{path}: there is no English card cards/{path.name}; a translated card has "
                                      f"the English card's file name")
                if path.name in cards:
                    text.cards[cards[path.name].id] = _card(path)
            for ref, step in zip(refs, lesson.steps):
                if isinstance(step, ExerciseStep):
                    data = _exercise(Path(step.exercise.path) / f"exercise.{language}.yaml", step)
                    if data is not None:
                        text.exercises[step.id] = data
                elif isinstance(step, Quiz):
                    text.quiz = _quiz(folder / f"{Path(str(ref)).stem}.{language}.yaml", step)
            for step in lesson.steps:
                prose = text.prose(step)
                if prose:
                    text.html[step.id] = render_markdown(prose)
            texts[(lesson.id, language)] = text
    return texts


def coverage(course: Course, translations: dict[tuple[str, str], LessonText]) -> list[dict[str, Any]]:
    """For the instructor: per lesson and language, how many pieces (title, summary, steps) are translated."""
    rows = []
    for lesson in course.lessons:
        row: dict[str, Any] = {"lesson": lesson, "languages": {}}
        for language in TRANSLATED:
            done, total = translations[(lesson.id, language)].pieces(lesson)
            row["languages"][language] = (done, total)
        rows.append(row)
    return rows
