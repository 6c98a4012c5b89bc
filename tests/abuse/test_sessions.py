"""Sessions and tokens against the running server: sign-out and password changes end old cookies, tokens
cannot make tokens, secrets are not cached, idle guests are removed."""
from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import func, select, update

from academy.data.models import Draft, User, utcnow
from tests.abuse.databases import admin
from tests.support.clients import Client
from tests.support.servers import LiveServer


def _copy(client: Client, address: str) -> Client:
    """Another machine holding a copy of `client`'s cookie (stolen, or saved before signing out)."""
    thief = Client(client.server, address)
    thief.cookie = client.cookie
    return thief


def _signed_in_as(client: Client) -> str | None:
    response = client.api("GET", "/api/progress") if client.cookie else None
    return response.json()["user"] if response is not None and response.status == 200 else None


def test_a_cookie_saved_before_sign_out_is_dead_after_it(shared_server: LiveServer) -> None:
    ada = Client(shared_server, "127.0.1.1")
    assert ada.signup("ada@example.org").status == 302
    saved = _copy(ada, "127.0.1.2")
    assert _signed_in_as(saved) == "ada@example.org"
    ada.form("/auth/signout")
    assert _signed_in_as(saved) is None
    assert saved.api("GET", "/api/progress").status == 401
    # Signing in again works, and the old copy stays dead.
    assert ada.signin("ada@example.org").status == 302 and _signed_in_as(ada) == "ada@example.org"
    assert _signed_in_as(saved) is None


def test_password_change_and_sign_out_everywhere_else(shared_server: LiveServer) -> None:
    here = Client(shared_server, "127.0.1.3")
    here.signup("bob@example.org")
    laptop = Client(shared_server, "127.0.1.4")
    laptop.signin("bob@example.org")
    thief = _copy(here, "127.0.1.5")
    assert _signed_in_as(laptop) == _signed_in_as(thief) == "bob@example.org"

    wrong = here.form("/auth/password", {"current": "not-it-at-all", "new": "new-password-1"})
    assert wrong.status in (302, 303) and _signed_in_as(laptop) == "bob@example.org"
    changed = here.form("/auth/password", {"current": "password123", "new": "new-password-1"})
    assert changed.status == 302
    assert _signed_in_as(here) == "bob@example.org"  # this browser stays signed in
    assert _signed_in_as(laptop) is None and _signed_in_as(thief) is None
    assert here.form("/auth/signout").status == 302
    assert here.signin("bob@example.org", "password123").status == 401
    assert here.signin("bob@example.org", "new-password-1").status == 302

    laptop.signin("bob@example.org", "new-password-1")
    page = here.get("/auth/account").text
    assert "Sign out everywhere else" in page
    assert here.form("/auth/sessions/end-others").status == 302
    assert _signed_in_as(here) == "bob@example.org" and _signed_in_as(laptop) is None


def test_a_token_cannot_create_tokens_and_the_token_page_is_not_cached(shared_server: LiveServer) -> None:
    owner = Client(shared_server, "127.0.1.6")
    owner.signup("carol@example.org")
    shown = owner.form("/auth/tokens", {"name": "laptop"})
    assert shown.status == 200 and "no-store" in shown.headers.get("Cache-Control", "")
    assert "no-store" in owner.get("/auth/account").headers.get("Cache-Control", "")
    token = re.search(r"<code>(dla_[^<]+)</code>", shown.text).group(1)

    script = Client(shared_server, "127.0.1.7", token=token)
    assert script.api("GET", "/api/progress").json()["user"] == "carol@example.org"
    minted = script.request("POST", "/auth/tokens", b"name=minted",
                            {"Content-Type": "application/x-www-form-urlencoded"})
    assert minted.status == 403 and "dla_" not in minted.text
    listed = owner.get("/auth/account").text
    assert "minted" not in listed and listed.count("/revoke") == 1


def test_idle_guests_are_removed_by_the_maintenance_command(server: LiveServer) -> None:
    idle = Client(server, "127.0.1.8").guest()
    idle.api("PUT", "/api/drafts/mixed-precision/amp-step", {"code": "x = 1"})
    active = Client(server, "127.0.1.9").guest()
    member = Client(server, "127.0.1.10")
    member.signup("dave@example.org")
    with admin(server) as db:
        # Forty days without a request: the idle guest, and an account (accounts are never removed).
        forty_days_ago = utcnow() - timedelta(days=40)
        db.execute(update(User).where(User.id.in_((1, 3))).values(last_seen_at=forty_days_ago,
                                                                   created_at=forty_days_ago))
    done = server.flask("remove-idle-guests")
    assert done.returncode == 0, done.stderr
    assert "Removed 1 guest" in done.stdout
    with admin(server) as db:
        assert db.scalars(select(User.id).order_by(User.id)).all() == [2, 3]
        assert db.scalar(select(func.count()).select_from(Draft)) == 0
    assert _signed_in_as(idle) is None and _signed_in_as(active) is not None


def test_a_signed_out_browser_can_sign_in_from_the_form_it_shows(shared_server: LiveServer) -> None:
    laptop = Client(shared_server, "127.0.1.11")
    laptop.signup("erin@example.org")
    token = laptop.csrf()  # the sign-in form, open on the laptop
    phone = Client(shared_server, "127.0.1.12")
    phone.signin("erin@example.org")
    phone.form("/auth/signout")  # signs the laptop out too
    again = laptop.form("/auth/signin", {"csrf_token": token, "email": "erin@example.org",
                                         "password": "password123"}, csrf=False)
    assert again.status == 302 and _signed_in_as(laptop) == "erin@example.org"
