"""Who is asking, and may they: the current user (session cookie or Bearer token), CSRF, role checks."""
from __future__ import annotations

import functools
import hmac
import secrets
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable
from urllib.parse import urlsplit

from babel.units import format_unit
from flask import Flask, Response, abort, flash, g, jsonify, make_response, redirect, request, session, url_for
from flask.sessions import SecureCookieSessionInterface, SessionMixin
from flask_babel import get_locale, gettext
from sqlalchemy import select
from sqlalchemy.orm.exc import StaleDataError

from academy.data.accounts import TOKEN_PREFIX, hash_token, new_api_token  # noqa: F401 - the API tokens live there
from academy.data.db import get_session
from academy.data.models import ApiToken, User, utcnow
from academy.i18n import N_
from academy.web.limits import spend_new_guest

UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
# How often a user's last_seen_at is written: often enough to tell a guest idle for 30 days, rarely
# enough that page views stay reads.
SEEN_EVERY = timedelta(hours=1)
NO_CREDENTIALS = N_("Sign in or send an API token (Authorization: Bearer ...).")

# -- how long a sign-in lasts (DLA_SESSION_IDLE_DAYS, DLA_SESSION_MAX_DAYS; guests: DLA_GUEST_IDLE_DAYS)
#
# The cookie session is signed, not stored, so its clocks travel in it, where no one can move them without the
# secret key: SIGNED_IN is when this browser signed in (never moved by use), LAST_USED when this copy of the
# cookie last made a request. A copy taken from a browser (a shared computer, a stolen disk) carries the time
# it was taken and ends `session_idle_days` after it, however busy the owner's own browser is meanwhile: the
# idle clock is per copy, not per account. A clock kept on the server for the account (User.last_seen_at)
# would be refreshed by the owner's requests for the thief's copy too. A copy in use stays alive up to the
# absolute limit, counted from the sign-in, which no request moves; a sign-out, a password change or "sign out
# everywhere else" ends it at once (User.session_secret).
SIGNED_IN, LAST_USED, GUEST = "t0", "seen", "guest"
USER_KEYS = ("user_id", "k", SIGNED_IN, LAST_USED, GUEST)
USE_EVERY_S = 60  # how often LAST_USED is moved on; far finer than any idle limit
DAY_S = 86400


def clock() -> float:
    """Seconds since the epoch: the clock of session lifetimes (tests move it)."""
    return time.time()


def csrf_token() -> str:
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(32)
    return session["csrf"]


# Fetch Metadata (Sec-Fetch-Site) that a navigation of this site itself sends: from one of its pages, or typed,
# bookmarked or reopened by the browser's user. "same-site" is a sibling host (another subdomain: another
# site's pages, perhaps anyone's), "cross-site" a link or redirect from anywhere else.
OWN_NAVIGATIONS = frozenset({"same-origin", "none"})


def from_this_site() -> bool:
    """Whether this request came from the site itself (or the browser's user), not from another site's link,
    form or redirect: SameSite=Lax cookies go with any top-level GET, so a foreign page can make a learner's
    browser open any page signed in. Browsers send Sec-Fetch-Site (to https and localhost origins); without
    it, a Referer of this origin (the pages send one: Referrer-Policy same-origin). A request with neither
    counts only where no browser made it (no "Mozilla/" in its User-Agent, which every browser sends): an
    old browser following a foreign link with its referrer suppressed does not count, a script does."""
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if fetch_site is not None:
        return fetch_site.strip().lower() in OWN_NAVIGATIONS
    referrer = request.headers.get("Referer")
    if referrer:  # by host alone: a proxy that does not say https makes this request's scheme http
        return urlsplit(referrer).netloc.lower() == urlsplit(request.host_url).netloc.lower()
    return "mozilla/" not in request.headers.get("User-Agent", "").lower()


def wants_json() -> bool:
    """The JSON API's requests (errors.py answers them the same way): the api blueprint's and the tutor's."""
    return request.blueprint == "api" or request.path.startswith("/api/")


# Where a visitor becomes the account that a session starts for: a sign-up (the visitor made it) or a new guest.
# A sign-in is not: on a shared computer, whoever signs in next is not the visitor who read those steps.
ADOPTING = frozenset({"auth.signup", "auth.guest"})


def start_session(user: User, adopt_visits: bool | None = None, *, signed_in: Any = None) -> None:
    """Sign `user` in on this browser: a fresh cookie session (and CSRF token), so no session fixation,
    naming the user and carrying the user's session secret and the sign-in's time (its lifetime counts from
    it). The steps this browser opened as a visitor (progress.remember_visitor_visit) become the user's where
    `adopt_visits` says so; left out, only where this visitor becomes the user (ADOPTING: a sign-up, a new
    guest), never at a sign-in, where they are dropped. `signed_in`: the sign-in time to keep (this browser's
    SIGNED_IN, where the new session only rotates an existing sign-in, e.g. answering the merge offer: the
    absolute lifetime still counts from the password); the sign-in is now where it is left out or no time.
    """
    from academy.content import get_content
    from academy.data import progress

    if adopt_visits is None:
        adopt_visits = request.endpoint in ADOPTING
    visits = progress.visitor_visits() if adopt_visits else {}
    session.clear()
    session.permanent = True
    session["user_id"] = user.id
    session["k"] = user.session_secret
    now = int(clock())
    kept = isinstance(signed_in, int) and not isinstance(signed_in, bool) and signed_in <= now
    session[SIGNED_IN], session[LAST_USED] = (signed_in if kept else now), now
    if user.is_guest:
        session[GUEST] = True
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
        try:
            db.commit()
        except StaleDataError:  # revoked (or its user deleted) while this request read it
            db.rollback()
            return _deny(401, N_("The API token is not valid (it may have been revoked)."))
        g.user, g.via_token = token.user, True
        return None
    user_id, secret = session.get("user_id"), session.get("k")
    if user_id is not None:
        user = get_session().get(User, user_id) if isinstance(user_id, int) else None
        # A deleted user, a cookie from before a sign-out, a password change or a merge (its secret is
        # replaced, even if the cookie was copied and replayed), or a user that only has the same id: forget
        # who it was. The CSRF token stays, so the sign-in form that browser already shows still works.
        if user is None or not isinstance(secret, str) or not hmac.compare_digest(secret, user.session_secret):
            _forget_user()
            return None
        ended = _lifetime_over(user)
        if ended is not None:
            _forget_user()
            if wants_json():
                return jsonify(error=ended), 401
            flash(ended, "error")  # shown on this page, or on the sign-in page a closed one sends it to
            return None
        g.user = user
        if _seen(user):
            try:
                get_session().commit()
            except StaleDataError:  # the row was deleted meanwhile (a merged guest, remove-idle-guests)
                get_session().rollback()
                _forget_user()
                g.user = None
    return None


def _forget_user() -> None:
    """This browser is no longer signed in. The CSRF token stays, so the sign-in form it already shows works."""
    for key in USER_KEYS:
        session.pop(key, None)


def _period(days: float) -> str:
    return format_unit(round(days, 2), "duration-day", length="long", locale=get_locale() or "en")


def _lifetime_over(user: User) -> str | None:
    """Why this cookie's session has ended (in the request's language), or None while it lives, when it is
    marked as used now. An account's: `session_max_days` after its sign-in, or `session_idle_days` after this
    copy's last request; a guest's (no password to sign in again with): `guest_idle_days` after its last
    request, the age at which `remove-idle-guests` deletes it anyway."""
    from academy.settings import settings

    own, now = settings(), clock()
    signed_in, last_used = session.get(SIGNED_IN), session.get(LAST_USED)
    if not isinstance(signed_in, int) or not isinstance(last_used, int):
        # A cookie from before session lifetimes (Flask accepted it: its signature is younger than the longest
        # lifetime): its clocks start now, so it ends by the same limits, counted from the upgrade.
        session[SIGNED_IN] = session[LAST_USED] = int(now)
        if user.is_guest:
            session[GUEST] = True
        return None
    if user.is_guest:
        if now - last_used >= own.guest_idle_days * DAY_S:
            return gettext("Your guest session ended after %(period)s without use; its progress is no longer "
                           "reachable.", period=_period(own.guest_idle_days))
    elif now - signed_in >= own.session_max_days * DAY_S:
        return gettext("Your session ended %(period)s after you signed in; sign in again.",
                       period=_period(own.session_max_days))
    elif now - last_used >= own.session_idle_days * DAY_S:
        return gettext("Your session ended after %(period)s without use; sign in again.",
                       period=_period(own.session_idle_days))
    if now - last_used >= USE_EVERY_S or now < last_used:
        session[LAST_USED] = int(now)
    return None


class LifetimeCookies(SecureCookieSessionInterface):
    """The session cookie's Expires: a signed-in browser's is at most the idle limit away (each request moves it
    on) and never past the absolute limit; a guest's, `guest_idle_days` away. A visitor's cookie (no
    user) is the browser's session cookie, as Flask makes it."""

    def get_expiration_time(self, app: Flask, session: SessionMixin) -> datetime | None:
        from academy.settings import settings

        signed_in = session.get(SIGNED_IN)
        if not session.permanent or not isinstance(signed_in, int):
            return super().get_expiration_time(app, session)
        own, now = settings(app), clock()
        if session.get(GUEST):
            end = now + own.guest_idle_days * DAY_S
        else:
            end = min(now + own.session_idle_days * DAY_S, signed_in + own.session_max_days * DAY_S)
        return datetime.fromtimestamp(end, timezone.utc)


def _seen(user: User) -> bool:
    now = utcnow()
    if user.last_seen_at is None or user.last_seen_at < now - SEEN_EVERY:
        user.last_seen_at = now
        return True
    return False


# Posted by another site on purpose, with no CSRF token: an LMS's login initiation and launch (academy/lti/launch.py).
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
    start_session(user, adopt_visits=True)  # this visitor becomes the guest: what it read counts
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
    app.session_interface = LifetimeCookies()
    app.before_request(_load_user)
    app.before_request(_check_csrf)
    app.jinja_env.globals["csrf_token"] = csrf_token

    @app.after_request
    def _security_headers(response: Response) -> Response:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        # Everything is served by the app itself; inline scripts are not used. No page may be framed, but the
        # few an LMS frames (academy/lti/blueprint.py sets their frame-ancestors to the LMS the browser's LTI
        # session came from).
        policy = response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        if "frame-ancestors 'none'" in policy:
            response.headers.setdefault("X-Frame-Options", "DENY")
        return response
