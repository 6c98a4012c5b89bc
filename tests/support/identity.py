"""Attacks on who a cookie or a token names, over HTTP against a running server, as functions that
tests/abuse/test_identity.py runs on SQLite and tests/deploy/test_identity_postgres.py on PostgreSQL.

Each takes the server, its `UserRows` and a loopback network of its own (`net`, e.g. "127.0.7"), so
several share one server. `reused=True` makes the database hand the freed id out again, as SQLite without
AUTOINCREMENT did by itself (and a sequence reset or a restored dump can): a cookie must not follow an id.
"""
from __future__ import annotations

import re

from tests.support.clients import Client
from tests.support.databases import UserRows
from tests.support.paths import EXERCISE
from tests.support.servers import LiveServer

STEP = "/lessons/mixed-precision/amp-step"  # the exercise's page: the learner's draft is in its editor
DRAFT = f"/api/drafts/{EXERCISE}"


def _signed_in_as(client: Client) -> str | None:
    response = client.api("GET", "/api/progress")
    return response.json()["user"] if response.status == 200 else None


def _guest_with_a_draft(client: Client, code: str) -> Client:
    client.guest()
    assert client.api("PUT", DRAFT, {"code": code}).status == 204
    return client


def _holding(server: LiveServer, address: str, cookie: str | None) -> Client:
    """Another browser holding a copy of a cookie."""
    holder = Client(server, address)
    holder.cookie = cookie
    return holder


def kept_guest_cookie_never_becomes_the_next_account(server: LiveServer, rows: UserRows, net: str, *,
                                                     reused: bool) -> None:
    """Finding 1: keep a guest's cookie, merge the guest into your account (the guest row is deleted), wait
    for the next account: the kept cookie must stay nobody's, whoever gets the freed id."""
    mine = f"attacker-{net}@example.org"
    attacker = Client(server, f"{net}.1")
    assert attacker.signup(mine).status == 302
    attacker.form("/auth/signout")
    _guest_with_a_draft(attacker, "x = 1")
    kept, guest_id = attacker.cookie, rows.newest_id()
    assert "/auth/merge" in attacker.signin(mine).location
    assert attacker.form("/auth/merge", {"action": "merge"}).status == 302
    assert not rows.exists(guest_id)  # merged away

    if reused:  # the id comes back, and to an instructor made from the command line
        rows.hand_out_again(guest_id)
        made = server.flask("create-user", f"teacher-{net}@example.org", "--instructor", "--password", "teach-me-1")
        assert made.returncode == 0, made.stderr
        assert rows.id_of(f"teacher-{net}@example.org") == guest_id
    else:
        assert Client(server, f"{net}.2").signup(f"next-{net}@example.org").status == 302

    holder = _holding(server, f"{net}.3", kept)
    assert holder.api("GET", "/api/progress").status == 401
    assert holder.get("/auth/account").status == 302  # to the sign-in page
    assert holder.get("/instructor/").status == 302
    minted = holder.form("/auth/tokens", {"name": "kept"})
    assert minted.status == 302 and "dla_" not in minted.text


def replayed_merge_offer_moves_nobodys_work(server: LiveServer, rows: UserRows, net: str, *, reused: bool) -> None:
    """Finding 2: a cookie saved while the merge offer stood, replayed on /auth/merge after the offer was taken
    and after another visitor's guest got the freed id, must merge nothing: the visitor keeps its work and
    stays signed in."""
    mine, victims_code = f"merger-{net}@example.org", f"victims_code_{net.replace('.', '_')} = 1"
    attacker = Client(server, f"{net}.1")
    assert attacker.signup(mine).status == 302
    attacker.form("/auth/signout")
    _guest_with_a_draft(attacker, "mine = 1")
    guest_id = rows.newest_id()
    assert "/auth/merge" in attacker.signin(mine).location
    offer = attacker.cookie
    assert attacker.form("/auth/merge", {"action": "merge"}).status == 302

    if reused:
        rows.hand_out_again(guest_id)
    victim = _guest_with_a_draft(Client(server, f"{net}.2"), victims_code)
    if reused:
        assert rows.newest_id() == guest_id
    replay = _holding(server, f"{net}.1", offer)
    replay.form("/auth/merge", {"action": "merge"})
    assert _signed_in_as(victim) is not None and victims_code in victim.get(STEP).text
    assert victims_code not in replay.get(STEP).text and victims_code not in attacker.get(STEP).text


def guest_cookies_copied_before_signup_or_signin_die(server: LiveServer, net: str) -> None:
    """Finding 3: a copy of a guest's cookie, taken before the guest signed up, is not the new account; and a
    copy taken before the guest's browser signed in to an account no longer reaches the guest (whose work
    only the merge offer, in that browser's new session, can take)."""
    browser = Client(server, f"{net}.1").guest()
    copy = browser.cookie
    assert browser.signup(f"newcomer-{net}@example.org").status == 302
    assert _signed_in_as(_holding(server, f"{net}.2", copy)) is None
    assert _signed_in_as(browser) == f"newcomer-{net}@example.org"

    browser.form("/auth/signout")
    _guest_with_a_draft(browser, "as_a_guest = 1")
    copy = browser.cookie
    assert "/auth/merge" in browser.signin(f"newcomer-{net}@example.org").location
    assert _signed_in_as(_holding(server, f"{net}.2", copy)) is None
    assert browser.form("/auth/merge", {"action": "discard"}).status == 302
    assert _signed_in_as(browser) == f"newcomer-{net}@example.org"


def token_of_a_deleted_user_dies(server: LiveServer, rows: UserRows, net: str) -> None:
    """An account deleted by hand (the sqlite3 shell: foreign keys off, its token row stays behind): neither
    its token nor its cookie answers as the account made after it."""
    owner = Client(server, f"{net}.1")
    assert owner.signup(f"deleted-{net}@example.org").status == 302
    token = re.search(r"<code>(dla_[^<]+)</code>", owner.form("/auth/tokens", {"name": "script"}).text).group(1)
    rows.delete(rows.id_of(f"deleted-{net}@example.org"))
    assert Client(server, f"{net}.2").signup(f"after-{net}@example.org").status == 302
    assert Client(server, f"{net}.3", token=token).api("GET", "/api/progress").status == 401
    assert _signed_in_as(owner) is None


def merge_ends_every_earlier_cookie_of_the_account(server: LiveServer, net: str) -> None:
    """A merge rotates the account's session like a sign-in or a sign-up: a copy of the account's cookie taken
    while the merge offer stood is no longer the account after the merge, and neither is the cookie of another
    browser signed in before (it signs in again); the browser that merged is, with the guest's work."""
    mine = f"keeper-{net}@example.org"
    other = Client(server, f"{net}.1")
    assert other.signup(mine).status == 302
    browser = _guest_with_a_draft(Client(server, f"{net}.2"), "merged_in = 1")
    assert "/auth/merge" in browser.signin(mine).location
    copy = browser.cookie
    assert _signed_in_as(_holding(server, f"{net}.3", copy)) == mine  # the account's, while the offer stands
    assert browser.form("/auth/merge", {"action": "merge"}).status == 302
    assert _signed_in_as(browser) == mine and "merged_in = 1" in browser.get(STEP).text

    replay = _holding(server, f"{net}.3", copy)
    assert replay.api("GET", "/api/progress").status == 401
    assert replay.get("/auth/account").status == 302  # to the sign-in page
    assert _signed_in_as(other) is None
