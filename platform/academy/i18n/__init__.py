"""Languages: the interface (Flask-Babel catalogs in academy/translations), per-language URLs, the
switcher, and the course's translation files.

URLs: every page answers under a language prefix too (`/it/lessons/...`): `LanguagePrefix` moves the
prefix from PATH_INFO to SCRIPT_NAME, so `url_for` keeps the language in every link of that page. A public
page without a prefix redirects by the learner's saved choice, else `Accept-Language`, to its prefixed
URL; where that is English it answers in English itself (`Vary: Accept-Language`). The JSON API (`/api/`)
answers in the language its request's `Accept-Language` names (lesson.js sends the page's), else English, so
scripts get English.

Content: next to each English file, `course.<lang>.yaml` and `lesson.<lang>.yaml` (title, summary),
`cards/<lang>/<card>.md`, `quiz.<lang>.yaml`, `exercise.<lang>.yaml` (docs/course.md). Whatever is missing is
shown in English, marked `lang="en"` in the markup, and the page says so (`NOT_TRANSLATED`; academy/localized.py).

One concern a module, each importing only those before it:

    languages.py    the languages (LANGUAGES, TRANSLATED, RTL) and N_
    messages.py     the phrases the pages' scripts and the editor need (js_text, editor_phrases), the status words
    course.py       the course's translation files (read by grader.core.translations) rendered, their coverage
    interface.py    each request's language: the prefix, the redirect, alternates, the switcher, init_app

Other modules import this package (`from academy import i18n`), never one of its modules.
"""
from __future__ import annotations

from flask_babel import gettext

from academy.i18n.course import (
    Heading,
    LessonText,
    QuestionText,
    QuizText,
    coverage,
    load_course_translations,
    load_translations,
)
from academy.i18n.interface import (
    NOT_TRANSLATED,
    LanguagePrefix,
    accepted_language,
    alternates,
    api_request,
    bp,
    choose,
    current_language,
    init_app,
    preferred_language,
    site_root,
    url_language,
)
from academy.i18n.languages import LANGUAGES, N_, RTL, TRANSLATED
from academy.i18n.messages import EDITOR_PHRASES, JS_MESSAGES, STATUSES, editor_phrases, js_text, msgid

__all__ = ["EDITOR_PHRASES", "JS_MESSAGES", "LANGUAGES", "NOT_TRANSLATED", "RTL", "STATUSES", "TRANSLATED", "Heading",
           "LanguagePrefix", "LessonText", "N_", "QuestionText", "QuizText",
           "accepted_language", "alternates", "api_request", "bp", "choose", "coverage", "current_language",
           "editor_phrases", "gettext", "init_app", "js_text", "load_course_translations", "load_translations", "msgid",
           "preferred_language", "site_root", "url_language"]
