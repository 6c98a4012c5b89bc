"""The course's translation files as the web app uses them: read and validated by grader.core.translations
(the one loader of the course's files) for the languages the app offers, their prose rendered to HTML once,
and their coverage for the instructor page."""
from __future__ import annotations

from typing import Any

from academy.i18n.languages import TRANSLATED
from academy.rendering import render_markdown
from grader.core import translations
from grader.core.course import Course
from grader.core.steps import QuestionText, QuizText
from grader.core.translations import Heading, LessonText

__all__ = ["Heading", "LessonText", "QuestionText", "QuizText", "coverage", "load_course_translations",
           "load_translations"]


def load_course_translations(course: Course) -> dict[str, Heading]:
    """Language -> the course's title and summary in it (`course.<lang>.yaml` next to course.yaml)."""
    return translations.load_course_translations(course, TRANSLATED)


def load_translations(course: Course) -> dict[tuple[str, str], LessonText]:
    """(lesson id, language) -> LessonText, for every lesson and every language other than English. Raises
    CourseError, naming the file, where a translation file is malformed or names what the English lacks.
    Cards and prompts are rendered here, once per (re)load, like the English ones (academy.content)."""
    texts = translations.load_translations(course, TRANSLATED)
    for (lesson_id, _language), text in texts.items():
        for step in course.lesson(lesson_id).steps:
            prose = text.prose(step)
            if prose:
                text.html[step.id] = render_markdown(prose)
    return texts


def coverage(course: Course, texts: dict[tuple[str, str], LessonText]) -> list[dict[str, Any]]:
    """For the instructor: per lesson and language, how many pieces (title, summary, steps) are translated."""
    rows = []
    for lesson in course.lessons:
        row: dict[str, Any] = {"lesson": lesson, "languages": {}}
        for language in TRANSLATED:
            done, total = texts[(lesson.id, language)].pieces(lesson)
            row["languages"][language] = (done, total)
        rows.append(row)
    return rows
