"""Languages: the interface (Flask-Babel catalogs in academy/translations), per-language URLs, the
switcher, and translated course content with English fallback.

URLs: every page answers under a language prefix too (`/it/lessons/...`): `LanguagePrefix` moves the
prefix from PATH_INFO to SCRIPT_NAME, so `url_for` keeps the language in every link of that page. A public
page without a prefix redirects by the learner's saved choice, else `Accept-Language`, to its prefixed
URL; where that is English it answers in English itself (`Vary: Accept-Language`). The JSON API (`/api/`)
answers in the language its request's `Accept-Language` names (lesson.js sends the page's), else English, so
scripts get English.

Content: next to each English file, `course.<lang>.yaml` and `lesson.<lang>.yaml` (title, summary),
`cards/<lang>/<card>.md`, `quiz.<lang>.yaml`, `exercise.<lang>.yaml` (docs/course.md). Whatever is missing is
shown in English, marked `lang="en"` in the markup, and the page says so (`NOT_TRANSLATED`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

import yaml
from flask import Blueprint, Flask, g, has_request_context, redirect, request, session
from flask.typing import ResponseReturnValue
from flask_babel import Babel, gettext, lazy_gettext, lazy_pgettext
from markupsafe import Markup, escape

from academy.data.db import get_session
from academy.inputs import safe_next
from academy.settings import settings
from grader.core.course import Card, Course, CourseError, ExerciseStep, Lesson, Quiz, QuizOption, QuizQuestion, Step
from grader.core.exercise import parse_yaml

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
    # lesson.js, the lesson page's frictions (issue 30): the device's words, a restored draft, the time limit, and
    # the older panel folded under the newest
    lazy_gettext("cpu (cuda emulated)"), lazy_gettext("Your draft, saved %(when)s"),
    lazy_gettext("Your draft from an earlier visit"), lazy_gettext("stops after %(seconds)s s"),
    lazy_gettext("Earlier Run, before this submission"), lazy_gettext("Earlier verdict, before this Run"),
    # lesson.js: how long a 429 (too many Runs or submissions) asks the learner to wait (its `retry_after`)
    lazy_gettext("Try again in %(seconds)s s."),
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


class Untranslated(str):
    """English text on a page in another language, shown because no translation file gives it. Templates show
    it through the `marked` filter, which tells browsers and screen readers it is English."""


def marked(text: Any) -> Markup:
    """The `marked` template filter: the text, escaped, inside `<span lang="en" dir="ltr">` where it is
    Untranslated (the page's notice says in words what this says in markup)."""
    if isinstance(text, Untranslated):
        return Markup('<span lang="en" dir="ltr">%s</span>') % str(text)
    return escape(text)


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
    from academy.content import render_markdown

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


class LocalizedHeading:
    """A course's or a lesson's title and summary as one page shows them in one language: translated where a
    file gives them, else the English as Untranslated; `missing` says whether anything shown fell back."""

    def __init__(self, english: Course | Lesson, language: str, text: Heading | None):
        self._english, self.language, self.text = english, language, text
        self.missing = False

    def _pick(self, translated: str | None, english: str) -> str:
        if self.text is None:  # an English page
            return english
        if not translated:
            self.missing = True
            return Untranslated(english)
        return translated

    @property
    def title(self) -> str:
        return self._pick(self.text and self.text.title, self._english.title)

    @property
    def summary(self) -> str:
        return self._pick(self.text and self.text.summary, self._english.summary)


class Localized(LocalizedHeading):
    """A lesson as one page shows it in one language: its heading, steps and quiz."""

    text: LessonText | None

    def __init__(self, lesson: Lesson, language: str, text: LessonText | None):
        super().__init__(lesson, language, text)
        self.lesson = lesson

    def _step_title(self, step: Step) -> str | None:
        if isinstance(step, Card):
            return self.text.cards.get(step.id, (None, None))[0]
        if isinstance(step, ExerciseStep):
            return self.text.exercises.get(step.id, {}).get("title")
        return self.text.quiz.title if self.text.quiz else None

    def step_title(self, step: Step, *, count: bool = True) -> str:
        """The step's title; `count=False` for a mention (the step list, a link) that does not make this page
        say it shows English."""
        if self.text is None:
            return step.title
        found = self._step_title(step)
        if count:
            return self._pick(found, step.title)
        return found or Untranslated(step.title)

    def step_html(self, step: Step, english_html: str) -> Markup | str:
        """A card's or exercise prompt's HTML in this language, else the English (`english` marks it)."""
        if self.text is None or step.page_markdown() is None:  # a quiz lays out its own (marked) texts
            return english_html
        found = self.text.html.get(step.id)
        if found:
            return Markup(found)  # render_markdown's output, sanitised by nh3
        self.missing = True
        return english_html

    def english(self, step: Step) -> Markup:
        """` lang="en" dir="ltr"` for the prose of a card or exercise shown in English on another language's
        page (a quiz marks each of its texts instead: `marked`)."""
        if self.text is None or step.page_markdown() is None or step.id in self.text.html:
            return Markup("")
        return Markup(' lang="en" dir="ltr"')

    def _question(self, question: QuizQuestion) -> QuestionText:
        quiz = self.text.quiz if self.text else None
        return (quiz.questions.get(question.id) if quiz else None) or QuestionText()

    def question(self, question: QuizQuestion) -> str:
        return self._pick(self._question(question).question, question.question)

    def option(self, question: QuizQuestion, option: QuizOption) -> str:
        return self._pick(self._question(question).options.get(option.id, {}).get("text"), option.text)

    def explanation(self, question: QuizQuestion, option: QuizOption) -> str:
        return self._pick(self._question(question).options.get(option.id, {}).get("explanation"),
                          option.explanation)

    def check_title(self, step: ExerciseStep, check_id: str, english: str) -> str:
        checks = self.text.exercises.get(step.id, {}).get("checks", {}) if self.text else {}
        return self._pick((checks.get(check_id) or {}).get("title"), english)


def localize(lesson: Lesson, language: str | None = None) -> Localized:
    from academy.content import get_content

    language = language or current_language()
    text = get_content().translations.get((lesson.id, language)) if language != "en" else None
    return Localized(lesson, language, text)


def localize_course(course: Course, language: str | None = None) -> LocalizedHeading:
    from academy.content import get_content

    language = language or current_language()
    text = get_content().course_translations.get(language) if language != "en" else None
    return LocalizedHeading(course, language, text)


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
    app.add_template_filter(marked)

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


__all__ = ["LANGUAGES", "gettext", "localize", "localize_course", "coverage", "init_app"]
