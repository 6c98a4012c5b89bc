"""How long a sign-in lasts (academy/web/security.py): an account's session ends `DLA_SESSION_IDLE_DAYS` after
its cookie's last request and `DLA_SESSION_MAX_DAYS` after its sign-in however busy it is; a guest's ends
`DLA_GUEST_IDLE_DAYS` after its last request. The clock is the app's own (security.clock), moved by the test:
the cookie's signature and the database keep real time, only the lifetimes read the moved clock."""
from __future__ import annotations

from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

import pytest
from flask import Flask
from sqlalchemy import select

from academy.data.db import get_session
from academy.data.models import User
from academy.web import security
from tests.support.apps import WebSession, new_session
from tests.support.paths import LESSON

DAY = 86400.0
IDLE = "Your session ended after 7 days without use; sign in again."
ABSOLUTE = "Your session ended 30 days after you signed in; sign in again."


class Clock:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1_900_000_000.0
        monkeypatch.setattr(security, "clock", lambda: self.now, raising=False)  # (the code before lifetimes had none)

    def days(self, days: float) -> None:
        self.now += days * DAY


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(monkeypatch)


def _signed_in_as(web: WebSession) -> str | None:
    """The name the page's header shows, or None for a visitor."""
    page = web.client.get("/auth/account-links").get_data(as_text=True)
    return None if "Sign in" in page else page


def _copy(web: WebSession, app: Flask) -> WebSession:
    """A second browser holding a copy of `web`'s session cookie, as a thief who copied it holds it."""
    thief = new_session(app)
    thief.client.set_cookie("session", web.client.get_cookie("session").value)
    return thief


def _expires(response) -> datetime:  # noqa: ANN001
    header = next(h for h in response.headers.getlist("Set-Cookie") if h.startswith("session="))
    expires = next(part.split("=", 1)[1] for part in header.split("; ") if part.lower().startswith("expires="))
    return parsedate_to_datetime(expires)


def test_a_cookie_copied_at_sign_in_and_replayed_after_the_idle_limit_is_refused(app, clock) -> None:  # noqa: ANN001
    """The owner uses the account every other day; the thief's copy, taken at sign-in and unused since, ends
    7 days after its own last request: the idle clock is the copy's, not the account's. The page says why;
    an API call answers 401 saying so."""
    ada = new_session(app)
    assert ada.signup("ada@example.org").status_code == 302
    stolen = ada.client.get_cookie("session").value
    for _ in range(4):  # days 2, 4, 6, 8: the owner's own browser stays signed in
        clock.days(2)
        assert _signed_in_as(ada), "the owner's session must live while she uses it"
    thief = new_session(app)
    thief.client.set_cookie("session", stolen)
    page = thief.client.get("/").get_data(as_text=True)
    assert IDLE in page and _signed_in_as(thief) is None
    thief.client.set_cookie("session", stolen)
    refused = thief.client.get("/api/progress")
    assert refused.status_code == 401 and refused.json["error"] == IDLE
    assert _signed_in_as(ada)  # ended: the copy, not the owner's session


def test_a_closed_course_sends_an_ended_session_to_sign_in_saying_why(make_app, clock) -> None:  # noqa: ANN001
    ada = WebSession(make_app(PUBLIC_LESSONS=False).test_client())
    ada.signup("ada@example.org")
    clock.days(7)
    page = ada.client.get(f"/lessons/{LESSON}/meet-autocast", follow_redirects=True).get_data(as_text=True)
    assert IDLE in page and 'name="password"' in page  # the sign-in form


def test_a_session_in_constant_use_ends_30_days_after_its_sign_in(app, clock) -> None:  # noqa: ANN001
    """Used every day (and so its copy too), a session still ends at the absolute limit; its cookie's own
    Expires never points past it, and is at most the idle limit away."""
    ada = new_session(app)
    signed_in = clock.now
    response = ada.signup("ada@example.org")
    assert _expires(response) == datetime.fromtimestamp(signed_in + 7 * DAY, timezone.utc).replace(microsecond=0)
    thief = _copy(ada, app)
    for day in range(1, 30):
        clock.days(1)
        response = thief.client.get("/auth/account-links")
        assert "Sign in" not in response.get_data(as_text=True), f"day {day}"
        assert _expires(response).timestamp() <= min(clock.now + 7 * DAY, signed_in + 30 * DAY)
    clock.days(1)
    assert ABSOLUTE in thief.client.get("/").get_data(as_text=True) and _signed_in_as(thief) is None
    assert ABSOLUTE in ada.client.get("/").get_data(as_text=True) and _signed_in_as(ada) is None
    # Signing in again starts a new 30 days.
    assert ada.signin("ada@example.org").status_code == 302
    clock.days(6)
    assert _signed_in_as(ada)


def test_a_guest_session_lives_while_used_and_ends_after_the_guests_idle_limit(app, clock) -> None:  # noqa: ANN001
    """A guest has no password to sign in again with: no absolute limit, and its idle limit is
    DLA_GUEST_IDLE_DAYS (30 here), the age at which remove-idle-guests deletes it."""
    guest = new_session(app).guest()
    response = guest.client.get("/")
    assert _expires(response).timestamp() == pytest.approx(clock.now + 30 * DAY, abs=1)
    for _ in range(6):  # 60 days, used every 10
        clock.days(10)
        assert _signed_in_as(guest)
    copy = _copy(guest, app)
    clock.days(30)
    page = copy.client.get("/").get_data(as_text=True)
    assert "Your guest session ended after 30 days without use" in page and _signed_in_as(copy) is None


def test_the_limits_are_the_operators(make_app, clock) -> None:  # noqa: ANN001
    app = make_app(SESSION_IDLE_DAYS=1, SESSION_MAX_DAYS=2)
    ada = new_session(app)
    ada.signup("ada@example.org")
    clock.days(0.9)
    assert _signed_in_as(ada)
    clock.days(0.9)
    assert _signed_in_as(ada)
    clock.days(0.3)  # 2.1 days after the sign-in
    assert "Your session ended 2 days after you signed in" in ada.client.get("/").get_data(as_text=True)


def test_a_cookie_from_before_lifetimes_ends_by_them_counted_from_the_upgrade(app, clock) -> None:  # noqa: ANN001
    """A session cookie signed before this version carries no clocks: it is not signed out by the upgrade, and
    its limits count from its first request after it."""
    new_session(app).signup("ada@example.org")
    with app.app_context():
        user = get_session().scalar(select(User))
        user_id, secret = user.id, user.session_secret
    old = new_session(app)
    with old.client.session_transaction() as cookie:
        cookie.update(user_id=user_id, k=secret, _permanent=True)  # what sign-in wrote before lifetimes
    assert _signed_in_as(old)
    clock.days(7)
    assert IDLE in old.client.get("/").get_data(as_text=True) and _signed_in_as(old) is None
