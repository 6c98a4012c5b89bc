"""The course as the web app shows it: `grader.course` objects plus their Markdown rendered to safe HTML.

Rendering happens once per (re)load, not per request, so a lesson page costs a template render only.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import nh3
from flask import Flask, current_app
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from academy.settings import settings
from grader.course import Course, Exercise, Lesson, Step, load_course

_ALLOWED_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "strong", "em", "code", "pre",
                 "span", "a", "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "div",
                 "img", "del", "sup", "sub"}
_ALLOWED_ATTRIBUTES = {"*": {"class"}, "a": {"href", "title"}, "img": {"src", "alt", "title"},
                       "th": {"align"}, "td": {"align"}}
_FORMATTER = HtmlFormatter(cssclass="highlight", nowrap=True)


def _highlight(code: str, lang: str, _attrs: str) -> str:
    # markdown-it wraps the callback's output in <pre><code> unless it already starts with "<pre".
    try:
        lexer = get_lexer_by_name(lang or "text")
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    return f'<pre class="highlight"><code>{highlight(code, lexer, _FORMATTER)}</code></pre>\n'


_MARKDOWN = MarkdownIt("commonmark", {"highlight": _highlight, "html": False}).enable("table")


def render_markdown(text: str) -> str:
    """Markdown to HTML that is safe to put in a page as-is (sanitised by nh3)."""
    return nh3.clean(_MARKDOWN.render(text), tags=_ALLOWED_TAGS, attributes=_ALLOWED_ATTRIBUTES,
                     url_schemes={"http", "https", "mailto"})


def pygments_css() -> str:
    """static/highlight.css: the light palette, and github-dark in dark mode (academy.css, static/theme.js)."""
    dark = HtmlFormatter(cssclass="highlight", nowrap=True, style="github-dark")
    return f"{_FORMATTER.get_style_defs('.highlight')}\n{dark.get_style_defs(':root[data-theme=dark] .highlight')}"


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


def build_content(root: Path | None) -> Content:
    course = load_course(root)
    html: dict[int, str] = {}
    for lesson in course.lessons:
        for step in lesson.steps:
            markdown = step.page_markdown()
            if markdown is not None:
                html[id(step)] = render_markdown(markdown)
    from academy.i18n import load_course_translations, load_translations
    return Content(course, html, load_translations(course), load_course_translations(course))


_lock = threading.Lock()


def get_content() -> Content:
    return current_app.extensions["academy.content"]


def reload_content(app: Flask) -> Content:
    """Load the exercises folder again (instructor "reload" in development). Raises CourseError."""
    with _lock:
        content = build_content(settings(app).exercises_dir)
        app.extensions["academy.content"] = content
    return content
