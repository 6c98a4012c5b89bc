"""Red team of issue 51 (what its helpers built), attacked as a learner, a thief or a squatter would. Each
`xfail(strict=True)` test is a finding that still succeeds (the test passes once it is fixed); the others show
a defence holding where the helpers' own tests do not look.

Everything is real: the app through Flask's test client on its own SQLite database, a real SMTP server
(aiosmtpd) receiving the confirmation mail, real sockets for the outbound requests, and scripts/run's own
server command (waitress, academy/serve.py) for the connection attack."""
from __future__ import annotations

import re
import socket
import threading
from typing import Iterator

import pytest
from flask import Flask
from sqlalchemy import func, select

from academy.data.db import get_session
from academy.data.models import ApiToken
from academy.web import security
from tests.support.apps import WebSession, new_session
from tests.support.mail import Inbox, confirm_link, link_path
from tests.support.paths import LESSON

DAY = 86400.0
TOKEN = re.compile(r"(dla_[A-Za-z0-9_-]{20,})")


def finding(reason: str) -> pytest.MarkDecorator:
    """A finding that still succeeds: the test fails (an assertion) until it is fixed."""
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"finding: {reason}")


class Clock:
    """The app's session clock (security.clock), moved by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1_900_000_000.0
        monkeypatch.setattr(security, "clock", lambda: self.now)

    def days(self, days: float) -> None:
        self.now += days * DAY


def _signed_in(web: WebSession) -> bool:
    return "Sign in" not in web.client.get("/auth/account-links").get_data(as_text=True)


def _answer_quiz(web: WebSession) -> None:
    assert web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"}).status_code in (200, 302)


# -- sessions: the absolute lifetime -------------------------------------------------------------------------

def test_a_stolen_cookie_cannot_outlive_the_absolute_limit_by_answering_the_merge_offer(
        app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner signs in on a browser that was a guest with progress and leaves the merge offer unanswered; a
    thief copies the cookie. On day 29 the thief answers the offer ("leave": no session of the owner ends) and
    gets a cookie that lives 30 more days: the absolute limit is meant to need the password again."""
    clock = Clock(monkeypatch)
    owner = new_session(app)
    assert owner.signup("owner@example.org").status_code == 302
    assert owner.post("/auth/signout").status_code == 302
    owner.guest()
    _answer_quiz(owner)
    assert "/auth/merge" in owner.signin("owner@example.org").headers["Location"]
    thief = new_session(app)
    thief.client.set_cookie("session", owner.client.get_cookie("session").value)
    for _ in range(29):  # the thief keeps the copy in use (within the idle limit)
        clock.days(1)
        assert _signed_in(thief)
    assert thief.post("/auth/merge", data={"action": "leave"}).status_code == 302
    clock.days(2)  # day 31: past the absolute limit of the sign-in on day 0
    assert not _signed_in(thief), "the copy outlived the 30 days after the owner's sign-in"



def test_a_thiefs_sign_out_everywhere_else_keeps_the_sign_in_time(app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held. "Sign out everywhere else" needs no password: a thief's copy that uses it on day 29 signs the owner
    out, keeps its own cookie (a new secret), and still ends 30 days after the owner's sign-in."""
    clock = Clock(monkeypatch)
    owner = new_session(app)
    assert owner.signup("owner@example.org").status_code == 302
    thief = new_session(app)
    thief.client.set_cookie("session", owner.client.get_cookie("session").value)
    for _ in range(29):
        clock.days(1)
        assert _signed_in(thief)
    assert thief.post("/auth/sessions/end-others").status_code == 302
    assert _signed_in(thief) and not _signed_in(owner)
    clock.days(1.01)
    assert not _signed_in(thief)

# -- confirmed emails: pending sign-ups --------------------------------------------------------------------

def _squat(app: Flask, box: Inbox, address: str) -> WebSession:
    squatter = new_session(app)
    assert squatter.signup(address, "squatter-pw", name="Squatter").status_code == 302
    box.wait(1)
    return squatter


def test_a_squatter_cannot_kill_the_owners_pending_sign_up_by_signing_up_after_it(mailing) -> None:
    """The squatter holds the victim's address unconfirmed. The victim signs up: a pending sign-up, its link
    mailed. The squatter, who cannot read that mail, signs up three more times with the same address (from one
    client, far inside the 60-per-hour sign-up limit): the victim's link is dead before the victim opens it, so
    the owner is kept from confirming, which the issue says must never happen."""
    app, box = mailing
    _squat(app, box, "victim@example.org")
    victim = new_session(app)
    assert victim.signup("victim@example.org", "victim-password", name="Victim").status_code == 202
    owner_link = box.link(2, "victim@example.org")
    for _ in range(3):
        assert new_session(app).signup("victim@example.org", "squatter-pw").status_code == 202
    box.wait(2)  # the three mailed nothing: one sign-up link per address per confirmation.RESEND_EVERY
    assert victim.client.get(link_path(owner_link)).status_code == 200, "the owner's link died"
    assert confirm_link(victim, owner_link, "victim-password").status_code == 303


def test_pending_sign_ups_cannot_flood_one_mailbox(mailing) -> None:
    """One client, ten sign-ups with the held address in a minute: ten mails to someone who asked for none (a
    botnet multiplies it by its addresses). An account's own link is limited to one per 5 minutes
    (confirmation.RESEND_EVERY); the pending sign-up's mail has no such limit."""
    from academy.web import confirmation

    app, box = mailing
    _squat(app, box, "target@example.org")
    for _ in range(10):
        assert new_session(app).signup("target@example.org", "squatter-pw").status_code == 202
    mails = len(box.messages) - 1
    assert mails <= confirmation.SIGNUP_LINKS_PER_ADDRESS, f"{mails} mails to one address in seconds"


# -- API tokens: a token minted across a password change --------------------------------------------------

@pytest.mark.parametrize("ending", ["/auth/password", "/auth/sessions/end-others"])
def test_a_token_minted_while_the_password_changes_does_not_survive_it(app: Flask, monkeypatch: pytest.MonkeyPatch,
                                                                      ending: str) -> None:
    """A thief holding a copy of the owner's cookie mints tokens in a loop; the owner changes the password. Any
    token request whose session check passed before the change commits, and whose insert comes after the
    change's revocation, keeps a token that the password change was meant to end. The interleaving is made
    certain here: the owner's change runs (in its own thread, its own client) at the moment the thief's request
    has been accepted (its cookie checked), before the view runs. "Sign out everywhere else" the same."""
    from flask import request

    owner = new_session(app)
    assert owner.signup("owner@example.org").status_code == 302
    thief = new_session(app)
    thief.client.set_cookie("session", owner.client.get_cookie("session").value)
    changed: list[int] = []

    def owner_ends_sessions_meanwhile() -> None:
        """Runs after the thief's session was accepted (academy.web.security's checks come first), before the view."""
        if request.endpoint != "auth.create_token" or changed:
            return

        def change() -> None:
            changed.append(owner.post(ending, data={"current": "password123", "new": "a-new-password"}).status_code)
        worker = threading.Thread(target=change)
        worker.start()
        worker.join(30)

    hooks = app.before_request_funcs.setdefault(None, [])
    hooks.append(owner_ends_sessions_meanwhile)
    try:
        minted = thief.post("/auth/tokens", data={"name": "stolen"})
    finally:
        hooks.remove(owner_ends_sessions_meanwhile)
    assert changed == [302]
    assert not _signed_in(thief)  # the thief's cookie did end
    found = TOKEN.search(minted.get_data(as_text=True))
    if found is not None:
        api = app.test_client().get("/api/progress", headers={"Authorization": f"Bearer {found.group(1)}"})
        assert api.status_code == 401, f"the token minted across {ending} still works"
    with app.app_context():
        assert get_session().scalar(select(func.count()).select_from(ApiToken)) == 0


# -- the server: connections --------------------------------------------------------------------------------

@pytest.mark.slow
def test_one_address_cannot_hold_every_connection(tmp_path) -> None:  # noqa: ANN001
    """scripts/run's server with DLA_WEB_CONNECTIONS=16 (1000 by default: as cheap for one machine to open). One
    attacker address opens 40 connections and sends nothing: waitress stops accepting at the limit, the silent
    ones are closed only after DLA_WEB_IDLE_TIMEOUT (the request deadline counts from a first byte that never
    comes), and the attacker reconnects as they go. Another learner's page must still answer within 5 s."""
    import http.client

    from tests.support.servers import ScriptedServer

    (tmp_path / "s").mkdir()
    server = ScriptedServer(tmp_path / "s", "waitress", {"DLA_WEB_CONNECTIONS": "16", "DLA_WEB_IDLE_TIMEOUT": "30",
                                                 "DLA_WEB_REQUEST_TIMEOUT": "10"}).start()
    held: list[socket.socket] = []
    try:
        for _ in range(40):
            attacker = socket.socket()
            attacker.bind(("127.0.0.66", 0))
            attacker.connect(("127.0.0.1", server.port))
            held.append(attacker)
        learner = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5, source_address=("127.0.0.7", 0))
        try:
            learner.request("GET", "/api/exercises")
            status = learner.getresponse().status
        except TimeoutError:
            status = None
        assert status == 200, "another learner's page did not answer within 5 s"
    finally:
        for attacker in held:
            attacker.close()
        server.stop()


# -- outbound requests (SSRF): what held ---------------------------------------------------------------------

@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 noting what each connection sends it within a second."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    received: list[bytes] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.settimeout(1)
            try:
                received.append(conn.recv(100))
            except OSError:
                received.append(b"")
            conn.close()
    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1], received
    server.close()


def test_loopback_in_every_spelling_is_refused_even_with_broad_private_networks(listener) -> None:  # noqa: ANN001
    """Decimal, octal, hex and short IPv4, IPv4-mapped IPv6 (both spellings), 0.0.0.0, an upper-case scheme, a
    fragment hiding an @: each connects to 127.0.0.1 and is closed before a byte is sent, also where
    DLA_LTI_PRIVATE_NETWORKS names loopback, link-local and everything; a user name in the URL is refused
    before connecting."""
    import ipaddress

    from academy.lti.outbound import OutboundError, Policy, session

    port, received = listener
    broad = tuple(ipaddress.ip_network(n) for n in ("127.0.0.0/8", "169.254.0.0/16", "0.0.0.0/0", "::/0"))
    urls = [f"https://{host}:{port}/" for host in ("2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0.0.0.0",
                                                    "[::ffff:127.0.0.1]", "[::ffff:7f00:1]")]
    urls += [f"HTTPS://127.0.0.1:{port}/", f"https://127.0.0.1:{port}#@example.org/"]
    for policy in (Policy(), Policy(private_networks=broad), Policy(allow_http=True, private_networks=broad)):
        for url in urls:
            with pytest.raises(OutboundError, match="not allowed"):
                session(policy).get(url)
        for url in (f"https://public@127.0.0.1:{port}/", f"https://127.0.0.1:{port}\\@example.org/"):
            with pytest.raises(OutboundError, match="user name"):
                session(policy).get(url)
        for address in ("169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254", "::1", "fe80::1"):
            assert not policy.address_allowed(ipaddress.ip_address(address)), address
    assert received and set(received) == {b""}  # connected, and closed before a byte of the request


# -- confirmation links: a second password form ------------------------------------------------------------

def test_the_confirmation_page_is_no_way_around_the_sign_in_back_off(mailing) -> None:
    """Whoever holds an unconfirmed account's link (the mailbox's reader: a shared or forwarded inbox, a mail
    scanner's log) can guess the account's password on the link's page for the link's 48 hours: each right guess
    signs that browser in. The sign-in form makes the 6th wrong password for an account wait, then twice as long
    each time; the link's page lets the 9th attempt through at once."""
    app, box = mailing
    owner = new_session(app)
    assert owner.signup("owner@example.org", "the-right-password").status_code == 302
    link = box.link(1, "owner@example.org")
    guesser = new_session(app)
    answers = [confirm_link(guesser, link, f"wrong-guess-{attempt}").status_code for attempt in range(8)]
    assert answers[:5] == [401] * 5 and set(answers[5:]) <= {401, 429}  # five free, as at the sign-in form
    right = confirm_link(guesser, link, "the-right-password")
    assert right.status_code == 429, "a right guess after 8 wrong ones went through at once"


def test_a_poisoned_host_never_reaches_the_mailed_link(mailing) -> None:
    """Held. The attack it stops: the attacker's own pending sign-up for the victim's address, its mail sent
    with a Host of the attacker's; a mail scanner fetches the link (with its token) from the attacker's server,
    and the attacker, who knows the sign-up's password, gets a confirmed account with the victim's address.
    Hosts that parsers read differently ("evil\\@localhost" is evil for a browser, localhost for urlsplit) and
    X-Forwarded-Host from an untrusted client: every link is this site's, or a bare path."""
    app, box = mailing
    _squat(app, box, "victim@example.org")
    hosts = ["evil.example\\@localhost", "evil.example/@localhost", "evil.example?@localhost",
             "evil.example#@localhost", "localhost:1@evil.example", "localhost:evil.example", "evil.example"]
    for number, host in enumerate(hosts):
        attacker = new_session(app)
        address = "victim@example.org" if number == 0 else f"new{number}@example.org"
        headers = {"Host": host, "X-Forwarded-Host": "evil.example"}
        page = attacker.client.get("/auth/signup", headers=headers).get_data(as_text=True)
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)
        answer = attacker.client.post("/auth/signup", headers=headers, data={
            "csrf_token": csrf, "email": address, "password": "attacker-pw", "name": "Attacker"})
        assert answer.status_code in (202, 302), (host, answer.status_code)
    for _recipients, message in box.wait(1 + len(hosts))[1:]:
        body = message.get_payload(decode=True).decode()
        link = re.search(r"\S*/auth/confirm/\S+", body).group(0)
        assert link.startswith(("/auth/confirm/", "http://localhost/auth/confirm/")), link


# -- every per-address limit: an IPv6 client has a /64 ---------------------------------------------------------

def test_one_ipv6_network_shares_one_budget(make_app) -> None:  # noqa: ANN001
    app = make_app(LIMIT_SIGNUPS_PER_ADDRESS="2 per hour")
    answers = []
    for number in range(4):  # one machine, four of its addresses
        client = app.test_client()
        client.environ_base["REMOTE_ADDR"] = f"2001:db8:5:6::{number + 1:x}"
        answers.append(WebSession(client).signup(f"user{number}@example.org").status_code)
    assert answers == [302, 302, 429, 429], f"sign-ups from one /64 with a limit of 2: {answers}"


def test_what_a_client_address_counts_as() -> None:
    from academy.web.limits import address_key

    assert address_key("2001:db8:5:6:a:b:c:d", 64) == "2001:db8:5:6::/64"
    assert address_key("2001:db8:5:6:a:b:c:d", 128) == "2001:db8:5:6:a:b:c:d/128"
    assert address_key("::ffff:203.0.113.9", 64) == "203.0.113.9"  # a dual-stack socket's IPv4 client
    assert address_key("fe80::1%eth0", 64) == "fe80::/64"
    assert address_key("203.0.113.9", 64) == "203.0.113.9" and address_key(None, 64) == "unknown"


# -- LTI administration: two registrations of one LMS at once -------------------------------------------------

def test_registering_one_lms_twice_at_once_answers_4xx(app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second registration's check runs before the first is committed, its insert after (the interleaving is
    made certain: the first registration runs whole while the second makes its key pair, between the two)."""
    from academy.data.accounts import create_account
    from academy.lti import registration  # register_platform looks new_key_pair up there

    app.config["PROPAGATE_EXCEPTIONS"] = False  # as served: an exception is a 500 page
    with app.app_context():
        create_account("teacher@example.org", "password123", role="instructor", name="Teacher")
        get_session().commit()
    tabs = [new_session(app), new_session(app)]
    for tab in tabs:
        assert tab.signin("teacher@example.org").status_code == 302
    fields = {"name": "Moodle", "issuer": "https://lms.example.org", "client_id": "abc",
              "auth_login_url": "https://lms.example.org/auth", "auth_token_url": "https://lms.example.org/token",
              "key_set_url": "https://lms.example.org/certs", "deployment_ids": "1"}
    real = registration.new_key_pair
    first: list[int] = []

    def first_tab_meanwhile() -> tuple:
        if not first:
            first.append(0)
            first[0] = tabs[0].post("/lti/platforms", data=fields).status_code
        return real()

    monkeypatch.setattr(registration, "new_key_pair", first_tab_meanwhile)
    try:
        status = tabs[1].post("/lti/platforms", data=fields).status_code
    except Exception:  # noqa: BLE001 - the 500 page itself failed (errors.py renders it on the failed session)
        status = 500  # what the server then answers on its own
    assert first == [303]
    assert 400 <= status < 500, f"the second registration answered {status}"
