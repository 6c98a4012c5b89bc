"""Languages: the interface (Flask-Babel catalogs in academy/translations), per-language URLs, the
switcher, and translated course content with English fallback.

URLs: every page answers under a language prefix too (`/it/lessons/...`): `LanguagePrefix` moves the
prefix from PATH_INFO to SCRIPT_NAME, so `url_for` keeps the language in every link of that page. A public
page without a prefix redirects by the learner's saved choice, else `Accept-Language`, to its prefixed
URL; where that is English it answers in English itself (`Vary: Accept-Language`). The JSON API (`/api/`)
answers in the language its request's `Accept-Language` names (lesson.js sends the page's), else English, so
scripts get English.

Content: next to each English file, `lesson.<lang>.yaml` (title, summary), `cards/<lang>/<card>.md`,
`quiz.<lang>.yaml`, `exercise.<lang>.yaml` (docs/course.md). Whatever is missing is shown in English, and
the page says so (`NOT_TRANSLATED`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from flask import Blueprint, Flask, g, has_request_context, redirect, request, session
from flask.typing import ResponseReturnValue
from flask_babel import Babel, gettext, lazy_gettext, lazy_pgettext
from markupsafe import Markup

from academy.db import get_session
from academy.inputs import safe_next
from academy.settings import settings
from grader.course import Card, Course, ExerciseStep, Lesson, QuizOption, QuizQuestion, Step

LANGUAGES = {"en": "English", "it": "Italiano", "ja": "日本語", "ar": "العربية"}
TRANSLATED = tuple(code for code in LANGUAGES if code != "en")
RTL = {"ar"}
# The sentence a page shows where parts of the lesson are still English (the seeds' own, in the catalogs).
NOT_TRANSLATED = lazy_gettext("Parts of this lesson are not yet translated and are shown in English.")


def N_(message: str) -> str:  # noqa: N802 (the gettext name pybabel extracts)
    """Marks an English message for the catalogs where it is defined; `gettext(message)` translates it where it
    is shown (a page, or a JSON error in the language the request asks for)."""
    return message


# What static/lesson.js and figures.js write into exercise pages, translated for the page (`js_text`);
# %(name)s-style placeholders are filled in by lesson.js.
JS_MESSAGES = [
    lazy_gettext("Draft kept in this browser"), lazy_gettext("Saving draft…"), lazy_gettext("Draft saved"),
    lazy_gettext("Running your code"), lazy_gettext("Queued"), lazy_gettext("All checks passed. Well done!"),
    lazy_gettext("Your code ran out of time."),
    lazy_gettext("Your code was stopped (it used too much memory or too many resources)."),
    lazy_gettext("Your code could not be checked."), lazy_gettext("The grader failed; your submission is saved."),
    lazy_gettext("%(passed)s of %(total)s checks passed."), lazy_gettext("Show a hint"),
    lazy_gettext("Show the next hint"), lazy_gettext("No submissions yet."), lazy_gettext("Run finished"),
    lazy_gettext("Run stopped"), lazy_gettext("Printed output"), lazy_gettext("Returned"),
    lazy_gettext("Code editor: your %(name)s solution"), lazy_gettext("View"), lazy_gettext("Restore"),
    lazy_gettext("Diff with previous"), lazy_gettext("When"), lazy_gettext("Score"), lazy_gettext("Status"),
    lazy_gettext("Draft not kept (this browser blocks storage)"), lazy_gettext("Draft not saved (%(status)s)"),
    lazy_gettext("Draft not saved (offline?)"), lazy_gettext("Reset to the starter code (Ctrl+Z undoes it)."),
    lazy_gettext("line %(line)s"), lazy_gettext("Grading failed; your submission is saved. Try again."),
    lazy_gettext("Not judged: %(check)s explains it."), lazy_gettext("an earlier check"),
    lazy_gettext("Output of your code"), lazy_gettext("(truncated)"), lazy_gettext("Graded in %(seconds)s s."),
    lazy_gettext("Graded in %(seconds)s s on %(device)s."), lazy_gettext("Hint"),
    lazy_gettext("Hint %(number)s of %(total)s"), lazy_gettext("Could not show the hint (%(status)s)"),
    lazy_gettext("passed"), lazy_gettext("failed"), lazy_gettext("error"), lazy_gettext("timed out"),
    lazy_gettext("stopped"), lazy_gettext("grader failed"), lazy_gettext("queued"), lazy_gettext("running"),
    lazy_gettext("Could not load your attempts (%(status)s)."), lazy_gettext("Could not load it."),
    lazy_gettext("Restored submission #%(id)s into the editor (Ctrl+Z undoes it)."),
    lazy_gettext("Submission #%(id)s is in the editor."), lazy_gettext("Submission #%(id)s against #%(previous)s"),
    lazy_gettext("Submission #%(id)s"), lazy_gettext("Not available (%(status)s)."),
    lazy_gettext("Could not fetch the result (%(status)s)."),
    lazy_gettext("Could not reach the server. Your code is still in the editor; try again."),
    lazy_gettext("Submitting failed (%(status)s)."), lazy_gettext("The Run failed; try again."),
    lazy_gettext("(nothing printed)"), lazy_gettext("Ran once on the example in %(seconds)s s. Not graded: Submit to "
                                                    "check it."),
    lazy_gettext("Ran once on the example in %(seconds)s s on %(device)s. Not graded: Submit to check it."),
    lazy_gettext("Running your function on the example…"), lazy_gettext("Run failed (%(status)s)."),
    lazy_gettext("Could not fetch the Run (%(status)s)."),
    # figures.js: its own headings and labels (the figures' titles and captions come from the grader)
    lazy_gettext("What your code did"), lazy_gettext("Line"), lazy_gettext("Call"), lazy_gettext("Autocast"),
    lazy_gettext("Output dtype"), lazy_gettext("Backward on"), lazy_gettext("Gradients"),
    lazy_pgettext("optimizer step", "Step"),
    lazy_gettext("Scale after"), lazy_gettext("on"), lazy_gettext("off"),
    lazy_gettext("%(title)s (%(group_label)s %(group)s of %(groups)s)"),
]

# The status words instructor pages show in badges (`_(status)`): of jobs, validation runs and results.
STATUSES = [lazy_gettext("queued"), lazy_gettext("running"), lazy_gettext("done"), lazy_gettext("ok"),
            lazy_gettext("passed"), lazy_gettext("failed"), lazy_gettext("error"), lazy_gettext("timeout"),
            lazy_gettext("killed"), lazy_gettext("infra-error"), lazy_gettext("not run")]


# CodeMirror's own phrases (EditorState.phrases) in the extensions the editor bundle includes (basicSetup:
# search, go to line, folding, completion, lint panel); "$" is CodeMirror's placeholder.
EDITOR_PHRASES = [
    lazy_pgettext("code editor", "Find"), lazy_pgettext("code editor", "Replace"),
    lazy_pgettext("code editor", "next"), lazy_pgettext("code editor", "previous"),
    lazy_pgettext("code editor", "all"), lazy_pgettext("code editor", "match case"),
    lazy_pgettext("code editor", "regexp"), lazy_pgettext("code editor", "by word"),
    lazy_pgettext("code editor", "replace"), lazy_pgettext("code editor", "replace all"),
    lazy_pgettext("code editor", "close"), lazy_pgettext("code editor", "current match"),
    lazy_pgettext("code editor", "on line"), lazy_pgettext("code editor", "replaced match on line $"),
    lazy_pgettext("code editor", "replaced $ matches"), lazy_pgettext("code editor", "Go to line"),
    lazy_pgettext("code editor", "go"), lazy_pgettext("code editor", "Folded lines"),
    lazy_pgettext("code editor", "Unfolded lines"), lazy_pgettext("code editor", "to"),
    lazy_pgettext("code editor", "folded code"), lazy_pgettext("code editor", "unfold"),
    lazy_pgettext("code editor", "Fold line"), lazy_pgettext("code editor", "Unfold line"),
    lazy_pgettext("code editor", "Completions"), lazy_pgettext("code editor", "Diagnostics"),
    lazy_pgettext("code editor", "No diagnostics"), lazy_pgettext("code editor", "Selection deleted"),
    lazy_pgettext("code editor", "Control character"),
]


def msgid(message: Any) -> str:
    """A lazy message's English text (the last argument: lazy_pgettext's first is its context)."""
    return message._args[-1]


def js_text() -> dict[str, str]:
    """English message -> this page's translation, for lesson.js (empty in English: it has the English)."""
    if g.get("language", "en") == "en":
        return {}
    return {msgid(message): str(message) for message in JS_MESSAGES}


def editor_phrases() -> dict[str, str]:
    """CodeMirror's English phrase -> this page's translation (empty in English)."""
    if g.get("language", "en") == "en":
        return {}
    return {msgid(phrase): str(phrase) for phrase in EDITOR_PHRASES}


bp = Blueprint("i18n", __name__)


class LanguagePrefix:
    """WSGI middleware: `/it/lessons/x` is `/lessons/x` with the language `it` (SCRIPT_NAME `/it`)."""

    def __init__(self, app: Any):
        self.app = app

    def __call__(self, environ: dict, start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        first, _, rest = path.lstrip("/").partition("/")
        if first in LANGUAGES and path.startswith(f"/{first}"):
            environ["dla.language"] = first
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + f"/{first}"
            environ["PATH_INFO"] = "/" + rest
        return self.app(environ, start_response)


def url_language() -> str | None:
    return request.environ.get("dla.language")


def preferred_language() -> str:
    """The learner's saved choice, else this browser's, else Accept-Language, else English."""
    user = g.get("user")
    if user is not None and getattr(user, "language", None) in LANGUAGES:
        return user.language
    if session.get("language") in LANGUAGES:
        return session["language"]
    return accepted_language()


def accepted_language() -> str:
    """The language this request's Accept-Language prefers among LANGUAGES, else English."""
    return request.accept_languages.best_match(list(LANGUAGES)) or "en"


def api_request() -> bool:
    return request.path.startswith("/api/")


def current_language() -> str:
    if api_request():  # the JSON API: what this request asks for (lesson.js sends its page's), else English
        return accepted_language()
    return url_language() or preferred_language()


def _public_page() -> bool:
    return request.method == "GET" and (request.endpoint == "index" or request.blueprint == "lessons")


def _redirect_to_language() -> ResponseReturnValue | None:
    if url_language() is not None or not _public_page():
        return None
    language = preferred_language()
    if language == "en":
        return None
    path = request.full_path if request.query_string else request.path
    response = redirect(f"{request.script_root}/{language}{path}")
    response.headers["Vary"] = "Accept-Language, Cookie"
    return response


def site_root() -> str:
    """The origin absolute links start with: DLA_PUBLIC_URL, else the request's own when its host is one of
    DLA_ALLOWED_HOSTS, else "" (links are then paths): never a Host header a client chose."""
    own = settings()
    if own.public_url:
        return own.public_url
    host = urlsplit(f"//{request.host}").hostname  # without the port; an IPv6 address without brackets
    return request.host_url.rstrip("/") if host in own.allowed_hosts else ""


def alternates() -> list[tuple[str, str]]:
    """(hreflang, absolute URL) of this page in every language, and x-default: the unprefixed URL."""
    root = site_root()
    path = request.full_path if request.query_string else request.path
    links = [(code, f"{root}/{code}{path}") for code in LANGUAGES]
    return [*links, ("x-default", f"{root}{path}")]


@bp.post("/language")
def choose() -> ResponseReturnValue:
    """The switcher: saved on the account (and this browser), then the same page in that language."""
    language = request.form.get("language", "")
    if language not in LANGUAGES:
        language = "en"
    session["language"] = language
    if g.user is not None:
        g.user.language = language
        get_session().commit()
    target = safe_next(request.form.get("next"), "/")
    first, _, rest = target.lstrip("/").partition("/")
    if first in LANGUAGES:  # a path that already names a language: the same page in the chosen one
        target = "/" + rest
    return redirect(f"/{language}{target}")


# -- course content ------------------------------------------------------------------------------


@dataclass
class LessonText:
    """One lesson's translation into one language: only what its files give."""
    title: str | None = None
    summary: str | None = None
    cards: dict[str, tuple[str, str]] = field(default_factory=dict)  # step id -> (title, markdown)
    exercises: dict[str, dict[str, Any]] = field(default_factory=dict)  # step id -> exercise.<lang>.yaml
    quiz: dict[str, Any] | None = None  # quiz.<lang>.yaml

    def pieces(self, lesson: Lesson) -> tuple[int, int]:
        """(translated, total): the title, the summary and each step count one."""
        done = (self.title is not None) + (self.summary is not None)
        for step in lesson.steps:
            done += step.id in self.cards if step.kind == "card" else 0
            done += step.id in self.exercises if step.kind == "exercise" else 0
            done += self.quiz is not None if step.kind == "quiz" else 0
        return done, 2 + len(lesson.steps)


def _yaml(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else None


def _card(path: Path) -> tuple[str, str] | None:
    if not path.is_file():
        return None
    first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    return (first[2:].strip(), rest.strip() + "\n") if first.startswith("# ") else None


def load_translations(course: Course) -> dict[tuple[str, str], LessonText]:
    """(lesson id, language) -> LessonText, for every lesson and every language other than English."""
    texts: dict[tuple[str, str], LessonText] = {}
    for lesson in course.lessons:
        folder = Path(course.root) / lesson.id
        refs = [next(v for k, v in raw.items() if k != "id")
                for raw in (yaml.safe_load((folder / "lesson.yaml").read_text()) or {}).get("steps", [])]
        for language in TRANSLATED:
            text = LessonText()
            meta = _yaml(folder / f"lesson.{language}.yaml") or {}
            text.title = str(meta["title"]) if meta.get("title") else None
            text.summary = str(meta["summary"]) if meta.get("summary") else None
            for ref, step in zip(refs, lesson.steps):
                if step.kind == "card":
                    card = _card(folder / "cards" / language / Path(str(ref)).name)
                    if card is not None:
                        text.cards[step.id] = card
                elif step.kind == "exercise":
                    data = _yaml(Path(step.exercise.path) / f"exercise.{language}.yaml")
                    if data is not None:
                        text.exercises[step.id] = data
                elif step.kind == "quiz":
                    text.quiz = _yaml(folder / f"{Path(str(ref)).stem}.{language}.yaml")
            texts[(lesson.id, language)] = text
    return texts


class Localized:
    """A lesson as one page shows it in one language: each text translated where a file gives it, else
    English; `missing` says whether anything shown fell back to English."""

    def __init__(self, lesson: Lesson, language: str, text: LessonText | None, render: Any):
        self.lesson, self.language, self.text, self._render = lesson, language, text, render
        self.missing = False

    def _pick(self, translated: Any, english: Any) -> Any:
        if self.text is None:
            return english
        if translated in (None, ""):
            self.missing = True
            return english
        return translated

    @property
    def title(self) -> str:
        return self._pick(self.text and self.text.title, self.lesson.title)

    @property
    def summary(self) -> str:
        return self._pick(self.text and self.text.summary, self.lesson.summary)

    def step_title(self, step: Step, *, count: bool = True) -> str:
        if self.text is None:
            return step.title
        if isinstance(step, Card):
            found = self.text.cards.get(step.id, (None, None))[0]
        elif isinstance(step, ExerciseStep):
            found = self.text.exercises.get(step.id, {}).get("title")
        else:
            found = (self.text.quiz or {}).get("title")
        return self._pick(found, step.title) if count else (found or step.title)

    def step_html(self, step: Step, english_html: str) -> Markup | str:
        if self.text is None:
            return english_html
        if isinstance(step, Card):
            found = self.text.cards.get(step.id, (None, None))[1]
        elif isinstance(step, ExerciseStep):
            found = self.text.exercises.get(step.id, {}).get("prompt")
        else:
            return english_html
        return self._render(found) if self._pick(found, None) is not None else english_html

    def english(self, step: Step) -> Markup:
        """` lang="en" dir="ltr"` for a step's title and text shown in English on a page in another language."""
        if self.text is None:
            return Markup("")
        if isinstance(step, Card):
            found = step.id in self.text.cards
        elif isinstance(step, ExerciseStep):
            found = bool(self.text.exercises.get(step.id, {}).get("prompt"))
        else:
            found = self.text.quiz is not None
        return Markup("") if found else Markup(' lang="en" dir="ltr"')

    def _question(self, question: QuizQuestion) -> dict[str, Any]:
        for raw in (self.text.quiz or {}).get("questions", []) if self.text else []:
            if isinstance(raw, dict) and str(raw.get("id")) == question.id:
                return raw
        return {}

    def question(self, question: QuizQuestion) -> str:
        return self._pick(self._question(question).get("question"), question.question)

    def _option(self, question: QuizQuestion, option: QuizOption) -> dict[str, Any]:
        options = self._question(question).get("options") or {}
        return options.get(option.id) or options.get(int(option.id) if option.id.isdigit() else None) or {} \
            if isinstance(options, dict) else {}

    def option(self, question: QuizQuestion, option: QuizOption) -> str:
        return self._pick(self._option(question, option).get("text"), option.text)

    def explanation(self, question: QuizQuestion, option: QuizOption) -> str:
        return self._pick(self._option(question, option).get("explanation"), option.explanation)

    def check_title(self, step: ExerciseStep, check_id: str, english: str) -> str:
        checks = self.text.exercises.get(step.id, {}).get("checks", {}) if self.text else {}
        found = checks.get(check_id, {}).get("title") if isinstance(checks, dict) else None
        return self._pick(found, english)


def localize(lesson: Lesson, language: str | None = None) -> Localized:
    from academy.content import get_content, render_markdown

    language = language or current_language()
    text = get_content().translations.get((lesson.id, language)) if language != "en" else None
    return Localized(lesson, language, text, lambda md: Markup(render_markdown(md)))


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


def _babel_locale() -> str:
    return current_language() if has_request_context() else "en"  # CLI commands (create-user) speak English


def init_app(app: Flask) -> None:
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", str(Path(__file__).parent / "translations"))
    Babel(app, locale_selector=_babel_locale)
    app.wsgi_app = LanguagePrefix(app.wsgi_app)  # type: ignore[method-assign]
    app.register_blueprint(bp)

    @app.before_request
    def _language() -> ResponseReturnValue | None:
        g.language = current_language()
        return _redirect_to_language()

    @app.after_request
    def _vary(response: Any) -> Any:
        if (url_language() is None and _public_page()) or (api_request() and response.status_code >= 400):
            response.vary.add("Accept-Language")  # an API error's message follows Accept-Language
        return response

    @app.context_processor
    def _globals() -> dict[str, Any]:
        language = g.get("language", "en")
        return {"language": language, "direction": "rtl" if language in RTL else "ltr", "languages": LANGUAGES,
                "alternates": alternates, "not_translated": NOT_TRANSLATED, "js_text": js_text,
                "editor_phrases": editor_phrases,
                "here": request.full_path.rstrip("?") if request.query_string else request.path}


__all__ = ["LANGUAGES", "gettext", "localize", "coverage", "init_app"]
