"""API tokens end with the credentials they were made under (issue 51): the attack against a running server,
on SQLite and PostgreSQL. A thief holds the owner's API token; the owner changes the password (or signs out
everywhere else), and the thief's token is refused (401) for submitting and for saving over the owner's draft.
Signing out says how many tokens still work, and revokes them when asked; every message gives the count."""
from __future__ import annotations

import html
import re
import threading
import time

import pytest
from flask import Flask, request
from sqlalchemy import func, select

from academy.data.db import get_session
from academy.data.models import ApiToken
from tests.support.apps import new_session
from tests.support.clients import Client
from tests.support.paths import EXERCISE
from tests.support.servers import LiveServer

TOKEN = re.compile(r'id="new-token">[^<]*<code>(dla_[A-Za-z0-9_-]+)</code>')


def _token(owner: Client, name: str) -> str:
    page = owner.form("/auth/tokens", {"name": name})
    assert page.status == 200, page.text[-300:]
    return TOKEN.search(page.text).group(1)


def _draft(thief: Client, code: str) -> int:
    return thief.api("PUT", f"/api/drafts/{EXERCISE}", {"code": code}).status


def _submit(thief: Client) -> int:
    # An exercise that does not exist: 404 for a valid token (nothing is graded), 401 for a revoked one.
    return thief.api("POST", "/api/submissions", {"exercise": "no-such/exercise", "code": "x = 1"}).status


def _flash(client: Client, url: str = "/auth/account") -> str:
    return html.unescape(client.get(url).text)


def test_a_password_change_ends_a_thiefs_token(shared_server: LiveServer) -> None:
    owner = Client(shared_server, "127.0.51.1")
    assert owner.signup("token-owner@example.org").status == 302
    thief = Client(shared_server, "127.0.51.2", token=_token(owner, "laptop"))
    assert _draft(thief, "the thief's draft") == 204 and _submit(thief) == 404  # the token works
    changed = owner.form("/auth/password", {"current": "password123", "new": "a-new-password"})
    assert changed.status == 302
    assert _submit(thief) == 401 and _draft(thief, "overwritten") == 401
    assert "every other session of your account is signed out. API tokens revoked: 1." in _flash(owner)
    assert "No tokens yet." in owner.get("/auth/account").text


def test_signing_out_everywhere_else_ends_tokens(shared_server: LiveServer) -> None:
    owner = Client(shared_server, "127.0.51.3")
    assert owner.signup("token-owner2@example.org").status == 302
    thieves = [Client(shared_server, "127.0.51.4", token=_token(owner, name)) for name in ("a", "b")]
    assert [_draft(thief, "x") for thief in thieves] == [204, 204]
    assert owner.form("/auth/sessions/end-others").status == 302
    assert [_submit(thief) for thief in thieves] == [401, 401]
    assert [_draft(thief, "y") for thief in thieves] == [401, 401]
    assert "Every other session of your account is signed out. API tokens revoked: 2." in _flash(owner)


def test_sign_out_says_tokens_remain_or_revokes_them(shared_server: LiveServer) -> None:
    owner = Client(shared_server, "127.0.51.5")
    assert owner.signup("token-owner3@example.org").status == 302
    script = Client(shared_server, "127.0.51.6", token=_token(owner, "cron"))
    page = owner.get("/auth/signout").text
    assert "Your API tokens (1) are no session" in html.unescape(page) and 'id="revoke-tokens"' in page
    assert owner.form("/auth/signout").status == 302
    assert "Signed out. Your API tokens still work (1)" in _flash(owner, "/")
    assert _draft(script, "still mine") == 204  # kept, as the page said
    assert owner.signin("token-owner3@example.org").status == 302
    assert owner.form("/auth/signout", {"revoke_tokens": "1"}).status == 302
    assert "Signed out. API tokens revoked: 1." in _flash(owner, "/")
    assert _draft(script, "gone") == 401 and _submit(script) == 401


# -- a token minted while the password changes (the red team's interleaving, on SQLite and PostgreSQL) ---------

@pytest.mark.parametrize("ending", ["/auth/password", "/auth/sessions/end-others"])
def test_a_token_minted_across_a_password_change_dies_with_it(race_app: Flask, ending: str) -> None:
    """The thief's token request has passed its session check when the owner's change commits (run from the
    thief's own request, after academy.web.security's checks and before the view, in another thread with its own
    client): the view must see that the session it was checked under has ended, on either database, and make
    no token (auth.create_token's guarded write)."""
    owner = new_session(race_app)
    assert owner.signup("owner@example.org").status_code == 302
    thief = new_session(race_app)
    thief.client.set_cookie("session", owner.client.get_cookie("session").value)
    changed: list[int] = []

    def owner_changes_meanwhile() -> None:
        if request.endpoint != "auth.create_token" or changed:
            return
        worker = threading.Thread(target=lambda: changed.append(
            owner.post(ending, data={"current": "password123", "new": "a-new-password"}).status_code))
        worker.start()
        worker.join(30)

    hooks = race_app.before_request_funcs.setdefault(None, [])
    hooks.append(owner_changes_meanwhile)
    try:
        minted = thief.post("/auth/tokens", data={"name": "stolen"})
    finally:
        hooks.remove(owner_changes_meanwhile)
    assert changed == [302]
    assert minted.status_code == 403 and "no token was made" in minted.get_data(as_text=True)
    with race_app.app_context():
        assert get_session().scalar(select(func.count()).select_from(ApiToken)) == 0
    # The owner's own browser still makes tokens.
    assert owner.post("/auth/tokens", data={"name": "mine"}).status_code == 200


def test_a_password_change_during_the_token_insert_waits_and_revokes_it(race_app: Flask) -> None:
    """The other order, on PostgreSQL: the thief's request has re-checked its session (holding the account's row)
    and is about to insert its token when the owner's password change starts. The change must wait for that
    token and revoke it: it is started just before the INSERT, and the insert goes on only once the change's
    request waits on a lock (or, without the row held, has finished)."""
    from sqlalchemy import create_engine, event, text

    engine = race_app.extensions["academy.engine"]
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite's writers queue on one file lock: the interleaving is the red team's test's")
    owner = new_session(race_app)
    assert owner.signup("owner@example.org").status_code == 302
    thief = new_session(race_app)
    thief.client.set_cookie("session", owner.client.get_cookie("session").value)
    changed: list[int] = []
    worker = threading.Thread(target=lambda: changed.append(
        owner.post("/auth/password", data={"current": "password123", "new": "a-new-password"}).status_code))
    watcher = create_engine(engine.url, isolation_level="AUTOCOMMIT")

    @event.listens_for(engine, "before_cursor_execute")
    def _before(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001
        if worker.ident is None and statement.lstrip().upper().startswith("INSERT INTO API_TOKENS"):
            worker.start()
            deadline = time.monotonic() + 20
            with watcher.connect() as other:
                while worker.is_alive() and time.monotonic() < deadline:
                    if other.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                          "AND datname = current_database()")).scalar():
                        return
                    time.sleep(0.02)
    try:
        minted = thief.post("/auth/tokens", data={"name": "stolen"})
        worker.join(30)
    finally:
        event.remove(engine, "before_cursor_execute", _before)
        watcher.dispose()
    assert changed == [302] and minted.status_code == 200
    token = TOKEN.search(minted.get_data(as_text=True)).group(1)
    api = race_app.test_client().get("/api/progress", headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 401
    with race_app.app_context():
        assert get_session().scalar(select(func.count()).select_from(ApiToken)) == 0
