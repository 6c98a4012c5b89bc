"""The course as the web app shows it: `grader.core.course` objects plus their Markdown rendered to safe HTML.

Loaded and rendered on first use (`get_content`), not when the app is made, and then once per reload, not
per request: a lesson page costs a template render only, and a command that never shows the course (e.g.
`create-user`) never reads it. The Markdown libraries are imported on first use for the same reason.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask, current_app
from markupsafe import Markup, escape

from academy.settings import settings

if TYPE_CHECKING:  # the course is read by the first get_content(), not at import (commands need none)
    from markdown_it import MarkdownIt

    from grader.core.course import Course, Exercise, Lesson, Step

_ALLOWED_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "strong", "em", "code", "pre",
                 "span", "a", "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "div",
                 "img", "del", "sup", "sub"}
_ALLOWED_ATTRIBUTES = {"*": {"class"}, "a": {"href", "title"}, "img": {"src", "alt", "title"},
                       "th": {"align"}, "td": {"align"}}


@cache
def _formatter(style: str = "default") -> Any:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass="highlight", nowrap=True, style=style)


def _tokens(code: str, lang: str, **options: Any) -> str:
    """`code` as Pygments' escaped HTML spans (classes styled by static/highlight.css), no wrapper."""
    from pygments import highlight
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(lang or "text", **options)
    except ClassNotFound:
        lexer = get_lexer_by_name("text", **options)
    return highlight(code, lexer, _formatter())


def _highlight(code: str, lang: str, _attrs: str) -> str:
    # markdown-it wraps the callback's output in <pre><code> unless it already starts with "<pre".
    return highlight_code(code, lang)


def highlight_code(code: str, lang: str = "python") -> str:
    """A block of code as a card's fenced code is shown: `<pre class="highlight"><code>` and Pygments' spans
    (the worked solution's code, the cards' code blocks). Safe as is: Pygments escapes the code."""
    return f'<pre class="highlight"><code>{_tokens(code, lang)}</code></pre>\n'


def code_spans(text: str) -> Markup:
    """Prose that writes code between `backticks` (quiz questions, options, explanations): the prose escaped, each
    code span highlighted as Python the way a card's code is, in `<code class="highlight">`."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code in it, shown as written
        return escape(text)
    html = [escape(part) if i % 2 == 0 else
            Markup('<code class="highlight">%s</code>') % Markup(_tokens(part, "python").rstrip("\n"))
            for i, part in enumerate(parts)]
    return Markup("").join(html)


@cache
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"highlight": _highlight, "html": False}).enable("table")


def render_markdown(text: str) -> str:
    """Markdown to HTML that is safe to put in a page as-is (sanitised by nh3)."""
    import nh3

    return nh3.clean(_markdown().render(text), tags=_ALLOWED_TAGS, attributes=_ALLOWED_ATTRIBUTES,
                     url_schemes={"http", "https", "mailto"})


def pygments_css() -> str:
    """static/highlight.css: the light palette, and github-dark in dark mode (academy.css, static/theme.js)."""
    dark = _formatter("github-dark")
    return f"{_formatter().get_style_defs('.highlight')}\n{dark.get_style_defs(':root[data-theme=dark] .highlight')}"


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
