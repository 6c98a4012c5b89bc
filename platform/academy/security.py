"""Who is asking, and may they: the current user (session cookie or Bearer token), CSRF, role checks."""
from __future__ import annotations

import functools
import hmac
import secrets
from datetime import timedelta
from typing import Any, Callable

from flask import Flask, Response, abort, g, jsonify, make_response, redirect, request, session, url_for
from flask_babel import gettext
from sqlalchemy import select

from academy.accounts import TOKEN_PREFIX, hash_token, new_api_token  # noqa: F401 - the API tokens live there
from academy.db import get_session
from academy.i18n import N_
from academy.limits import spend_new_guest
from academy.models import ApiToken, User, utcnow

UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
# How often a user's last_seen_at is written: often enough to tell a guest idle for 30 days, rarely
# enough that page views stay reads.
SEEN_EVERY = timedelta(hours=1)
NO_CREDENTIALS = N_("Sign in or send an API token (Authorization: Bearer ...).")


def csrf_token() -> str:
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(32)
    return session["csrf"]


def wants_json() -> bool:
    """The JSON API's requests (errors.py answers them the same way): the api blueprint's and the tutor's."""
    return request.blueprint == "api" or request.path.startswith("/api/")


def start_session(user: User, adopt_visits: bool = True) -> None:
    """Sign `user` in on this browser: a fresh cookie session (and CSRF token), so no session fixation,
    naming the user and carrying the user's session secret. The steps this browser opened as a visitor
    (progress.remember_visitor_visit) become the user's, unless `adopt_visits` is False."""
    from academy import progress
    from academy.content import get_content

    visits = progress.visitor_visits() if adopt_visits else {}
    session.clear()
    session.permanent = True
    session["user_id"] = user.id
    session["k"] = user.session_secret
    if visits:
        progress.adopt_visits(user, visits, {lesson.id: lesson for lesson in get_content().course.lessons})


def end_other_sessions(user: User) -> None:
    """Every cookie issued to `user` so far stops working (caller commits); this browser stays signed in."""
    user.end_sessions()
    if g.get("user") is not None and g.user.id == user.id and not g.get("via_token"):
        session["k"] = user.session_secret


def _load_user() -> Any:
    g.user = None
    g.via_token = False
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        # Tokens are for scripts on the JSON API. Elsewhere (the account page that makes tokens, forms)
        # a stolen token must not act like a signed-in browser.
        if not request.path.startswith("/api/"):
            return _deny(403, N_("API tokens work only for the JSON API under /api/; sign in to use this page."))
        db = get_session()
        token = db.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(header[7:].strip())))
        if token is None or token.user is None:  # revoked, or its user's row is gone
            return _deny(401, N_("The API token is not valid (it may have been revoked)."))
        token.last_used_at = utcnow()
        _seen(token.user)
        db.commit()
        g.user, g.via_token = token.user, True
        return None
    user_id, secret = session.get("user_id"), session.get("k")
    if user_id is not None:
        user = get_session().get(User, user_id) if isinstance(user_id, int) else None
        # A deleted user, a cookie from before a sign-out, a password change or a merge (its secret is
        # replaced, even if the cookie was copied and replayed), or a user that only has the same id: forget
        # who it was. The CSRF token stays, so the sign-in form that browser already shows still works.
        if user is None or not isinstance(secret, str) or not hmac.compare_digest(secret, user.session_secret):
            session.pop("user_id", None)
            session.pop("k", None)
            return None
        g.user = user
        if _seen(user):
            get_session().commit()
    return None


def _seen(user: User) -> bool:
    now = utcnow()
    if user.last_seen_at is None or user.last_seen_at < now - SEEN_EVERY:
        user.last_seen_at = now
        return True
    return False


# Posted by another site on purpose, with no CSRF token: an LMS's login initiation and launch (academy/lti.py).
# Neither acts on the browser's session: each is checked by its own state cookie, one-time nonce and the
# platform's signature, and a launch starts a fresh session for the LMS user it names.
# The deep-linking answer too: an LMS shows the picker in a frame, where the Lax session cookie (and so its CSRF
# token) is not sent; the answer is bound instead to the browser's LTI session cookie and to the launch's
# unguessable id, which only the picker page holds.
CSRF_EXEMPT = frozenset({"lti.login", "lti.launch", "lti.deep_link"})


def _check_csrf() -> Any:
    # Bearer calls carry no ambient credential a third-party page could borrow, so they need no token.
    if request.method not in UNSAFE_METHODS or g.via_token or request.endpoint in CSRF_EXEMPT:
        return None
    if g.user is None and wants_json() and not may_become_guest():
        # No credentials at all: that is a 401 (every unsafe API call needs a user), not a CSRF failure.
        # A browser session (it holds a CSRF token) on a public course is checked below and may become a guest.
        return _deny(401, NO_CREDENTIALS)
    sent = request.headers.get("X-CSRF-Token") or request.form.get("csrf_token", "")
    expected = session.get("csrf")
    if not expected or not hmac.compare_digest(sent, expected):
        return _deny(400, N_("The form expired or did not come from this site (CSRF check failed). "
                             "Reload the page and try again."))
    return None


def _deny(status: int, message: str) -> Any:
    """`message` (marked with N_) in the request's language: the page's on an error page; for the JSON API the
    one its Accept-Language names, else English (i18n.current_language)."""
    if wants_json():
        return jsonify(error=gettext(message)), status
    abort(status, description=gettext(message))


def login_required(view: Callable) -> Callable:
    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if g.user is None:
            if wants_json():
                return jsonify(error=gettext(NO_CREDENTIALS)), 401
            return redirect(url_for("auth.signin", next=request.full_path.rstrip("?")))
        return view(*args, **kwargs)
    return wrapped


def public_lessons() -> bool:
    from academy.settings import settings
    return bool(settings().public_lessons)


def public_page(view: Callable) -> Callable:
    """A lesson page anyone may read when the course is public (DLA_PUBLIC_LESSONS); else login_required."""
    closed = login_required(view)

    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return view(*args, **kwargs) if public_lessons() else closed(*args, **kwargs)
    return wrapped


def may_become_guest() -> bool:
    """A browser session without a user, on a public course, sending an unsafe request: it holds a CSRF
    token (only pages of this site put one in its cookie), so it may become a guest at its first action
    that needs a learner. API requests without any cookie session still get 401."""
    return (g.user is None and public_lessons() and "csrf" in session
            and request.method in UNSAFE_METHODS and not g.get("via_token"))


def become_guest() -> None:
    """Make this browser a guest (caller: after the CSRF check passed). The CSRF token is kept, so the
    page already open goes on working; it spends the same per-address budget of new guests as /auth/guest
    (429 above it)."""
    spend_new_guest()
    token = session.get("csrf")
    user = User(is_guest=True)
    db = get_session()
    db.add(user)
    db.commit()
    start_session(user)
    session["csrf"] = token
    g.user = user


def learner_required(view: Callable) -> Callable:
    """Like login_required, for the actions that need a learner (Run, Submit, a quiz answer): a browser
    session on a public course becomes a guest transparently, without an extra click."""
    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if g.user is None and may_become_guest():
            become_guest()
        return login_required(view)(*args, **kwargs)
    return wrapped


def instructor_required(view: Callable) -> Callable:
    @functools.wraps(view)
    @login_required
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not g.user.is_instructor:
            return _deny(403, N_("This page is for instructors."))
        return view(*args, **kwargs)
    return wrapped


def no_store(view: Callable) -> Callable:
    """For pages that show a secret (a new API token): no browser or proxy cache may keep a copy."""
    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        response = make_response(view(*args, **kwargs))
        response.headers["Cache-Control"] = "no-store"
        return response
    return wrapped


CONTENT_SECURITY_POLICY = ("default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                           "object-src 'none'; base-uri 'none'; frame-ancestors 'none'")


def init_app(app: Flask) -> None:
    app.before_request(_load_user)
    app.before_request(_check_csrf)
    app.jinja_env.globals["csrf_token"] = csrf_token

    @app.after_request
    def _security_headers(response: Response) -> Response:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        # Everything is served by the app itself; inline scripts are not used. No page may be framed, but the
        # few an LMS frames (academy/lti.py sets their frame-ancestors to the registered LMSes).
        policy = response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        if "frame-ancestors 'none'" in policy:
            response.headers.setdefault("X-Frame-Options", "DENY")
        return response
