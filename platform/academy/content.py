"""The course as the web app shows it: `grader.core.course` objects plus their Markdown rendered to safe HTML.

Loaded and rendered on first use (`get_content`), not when the app is made, and then once per reload, not
per request: a lesson page costs a template render only, and a command that never shows the course (e.g.
`create-user`) never reads it. Markdown: rendering.py; the translations: academy/i18n/course.py.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from flask import Flask, current_app

from academy.rendering import render_markdown
from academy.settings import settings

if TYPE_CHECKING:  # the course is read by the first get_content(), not at import (commands need none)

    from grader.core.course import Course, Exercise, Lesson, Step


@dataclass(frozen=True)
class Content:
    """A loaded course and the HTML of every step that has markdown (cards, exercise prompts), keyed by the
    step's identity."""
    course: Course
    html: dict[int, str]
    translations: dict = field(default_factory=dict)  # (lesson id, language) -> i18n.LessonText
    course_translations: dict = field(default_factory=dict)  # language -> i18n.Heading (the course's own)

    def step_html(self, step: Step) -> str:
        return self.html.get(id(step), "")

    def lesson(self, lesson_id: str) -> Lesson:
        return self.course.lesson(lesson_id)

    def exercise(self, exercise_id: str) -> Exercise:
        return self.course.exercises[exercise_id]


def build_content(root: str | Path | None) -> Content:
    from grader.core.course import load_course

    course = load_course(root)
    html: dict[int, str] = {}
    for lesson in course.lessons:
        for step in lesson.steps:
            markdown = step.page_markdown()
            if markdown is not None:
                html[id(step)] = render_markdown(markdown)
    from academy.i18n import load_course_translations, load_translations
    return Content(course, html, load_translations(course), load_course_translations(course))


_lock = threading.Lock()  # one load at a time: the first requests of a new process wait for one load, not many


def get_content(app: Flask | None = None) -> Content:
    """The course of `app` (else of the current app), loaded on first use. Raises CourseError while the course
    files cannot be loaded (the next call tries again)."""
    app = app or current_app._get_current_object()  # type: ignore[attr-defined]
    content = app.extensions.get("academy.content")
    if content is None:
        with _lock:
            content = app.extensions.get("academy.content")  # loaded by the thread this one waited for
            if content is None:
                content = _load(app)
    return content


def reload_content(app: Flask) -> Content:
    """Load the exercises folder again (instructor "reload" in development). Raises CourseError, and the
    content loaded before stays."""
    with _lock:
        return _load(app)


def _load(app: Flask) -> Content:
    content = build_content(settings(app).exercises_dir)
    app.extensions["academy.content"] = content
    return content


def init_app(app: Flask) -> None:
    """Nothing is read here: the course is loaded by the first get_content()."""
    app.extensions["academy.content"] = None
