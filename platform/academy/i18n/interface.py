"""The interface's language for each request: Flask-Babel (the catalogs in academy/translations), per-language
URLs, the redirect of unprefixed public pages, `hreflang` alternates, the switcher (`POST /language`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Flask, g, has_request_context, redirect, request, session
from flask.typing import ResponseReturnValue
from flask_babel import Babel, lazy_gettext

from academy.data.db import get_session
from academy.i18n.languages import LANGUAGES, RTL
from academy.i18n.messages import editor_phrases, js_text
from academy.redirects import safe_next
from academy.rendering import marked
from academy.settings import settings

# The sentence a page shows where parts of the lesson are still English (the seeds' own, in the catalogs).
NOT_TRANSLATED = lazy_gettext("Parts of this lesson are not yet translated and are shown in English.")


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




def _babel_locale() -> str:
    return current_language() if has_request_context() else "en"  # CLI commands (create-user) speak English


def init_app(app: Flask) -> None:
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", str(Path(__file__).parent.parent / "translations"))
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
