"""The course's translation files, read and validated beside the English ones they translate:
`course.<lang>.yaml`, `lesson.<lang>.yaml` (title, summary), and each step's own file, which its class reads
(steps.py: `cards/<lang>/<card>.md`, `quiz.<lang>.yaml`, `exercise.<lang>.yaml`; docs/course.md).

Which languages there are is the caller's (the web app's `academy.i18n.TRANSLATED`); nothing here renders.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader.core import coursefiles
from grader.core.course import Course, CourseError, Lesson
from grader.core.steps import CardText, Step, StepText

__all__ = ["Heading", "LessonText", "load_course_translations", "load_lesson_translation", "load_translations"]


@dataclass
class Heading:
    """A title and a summary in one language: the course's (`course.<lang>.yaml`) or a lesson's."""
    title: str | None = None
    summary: str | None = None


@dataclass
class LessonText(Heading):
    """One lesson's translation into one language: only what its files give."""
    steps: dict[str, StepText] = field(default_factory=dict)  # step id -> that step's text, where a file gives it
    html: dict[str, str] = field(default_factory=dict)  # step id -> its prose as safe HTML (the web app renders)

    def step(self, step_id: str) -> StepText | None:
        return self.steps.get(step_id)

    def _of_kind(self, kind: str) -> dict[str, StepText]:
        return {step_id: text for step_id, text in self.steps.items() if text.kind == kind}

    @property
    def cards(self) -> dict[str, tuple[str, str]]:
        """Step id -> (title, markdown) of each translated card."""
        return {step_id: (text.title, text.markdown) for step_id, text in self.steps.items()
                if isinstance(text, CardText)}

    @property
    def exercises(self) -> dict[str, StepText]:
        return self._of_kind("exercise")

    @property
    def quiz(self) -> StepText | None:
        return next(iter(self._of_kind("quiz").values()), None)

    def pieces(self, lesson: Lesson) -> tuple[int, int]:
        """(translated, total): the title, the summary and each step count one."""
        done = (self.title is not None) + (self.summary is not None)
        done += sum(step.id in self.steps for step in lesson.steps)
        return done, 2 + len(lesson.steps)

    def prose(self, step: Step) -> str | None:
        """A card's or an exercise prompt's translated markdown, if a file gives it."""
        text = self.steps.get(step.id)
        return text.prose if text is not None else None


def _heading(path: Path, schema: str) -> Heading:
    data = coursefiles.read(path, schema, optional=True) or {}
    return Heading(data.get("title") or None, data.get("summary") or None)


def load_course_translations(course: Course, languages: tuple[str, ...]) -> dict[str, Heading]:
    """Language -> the course's title and summary in it (`course.<lang>.yaml` next to course.yaml)."""
    return {language: _heading(Path(course.root) / f"course.{language}.yaml", "course.translation")
            for language in languages}


def load_lesson_translation(course: Course, lesson: Lesson, language: str) -> LessonText:
    """One lesson in one language. Raises CourseError, naming the file, where a translation file is malformed
    or names what the English lacks."""
    folder = Path(course.root) / lesson.id
    heading = _heading(folder / f"lesson.{language}.yaml", "lesson.translation")
    text = LessonText(heading.title, heading.summary)
    for path in sorted((folder / "cards" / language).glob("*.md")):
        if not (folder / "cards" / path.name).is_file():  # a misspelt name; an unlisted card is fine
            raise CourseError(f"{path}: there is no English card cards/{path.name}; a translated card has "
                              f"the English card's file name")
    for step in lesson.steps:
        piece = step.load_text(folder, language)
        if piece is not None:
            text.steps[step.id] = piece
    return text


def load_translations(course: Course, languages: tuple[str, ...]) -> dict[tuple[str, str], LessonText]:
    """(lesson id, language) -> LessonText, for every lesson and each of `languages`."""
    return {(lesson.id, language): load_lesson_translation(course, lesson, language)
            for lesson in course.lessons for language in languages}
