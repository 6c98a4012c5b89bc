"""Races on accounts answer 4xx, never 500 (issue 51), on SQLite and PostgreSQL, against a running server:
simultaneous sign-ups with one new address (one makes the account; the others wait for the address's link,
or are told to try again), and the answers to one merge offer sent at once
from copies of one browser (a merge and a refusal, four times each: one answer counts, the others are told so)."""
from __future__ import annotations

import threading
import urllib.parse
from typing import Callable

from tests.support.clients import Client, Response
from tests.support.paths import LESSON
from tests.support.servers import LiveServer

ROUNDS = 4  # each a fresh address or guest; the race is lost or won in every one
STEPS = ["what-mixed-precision-means", "why-half-precision-is-faster", "the-catch-with-16-bit", "meet-autocast",
         "what-autocast-wraps", "meet-gradscaler", "scale-the-loss"]  # a guest's work: a merge that takes a while


def _at_once(calls: list[Callable[[], Response]]) -> list[int]:
    """Run `calls` in threads released together; their statuses."""
    gate, statuses = threading.Barrier(len(calls)), [0] * len(calls)

    def run(i: int) -> None:
        gate.wait()
        statuses[i] = calls[i]().status

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return statuses


def test_simultaneous_sign_ups_with_one_address(shared_server: LiveServer) -> None:
    for round_ in range(ROUNDS):
        clients = [Client(shared_server, f"127.0.53.{8 * round_ + i + 1}") for i in range(6)]
        for client in clients:
            client.csrf()  # each its own session and token, fetched before the gate opens
        email = f"twin{round_}@example.org"
        forms = [client.form for client in clients]
        statuses = _at_once([lambda f=f: f("/auth/signup", {"email": email, "password": "password123",
                                                            "name": "Twin"}) for f in forms])
        assert all(status < 500 for status in statuses), statuses
        assert statuses.count(302) == 1, statuses  # one account; the others wait for a link (202) or retry (409)
        assert set(statuses) <= {302, 202, 409}, statuses


def test_a_merge_and_a_refusal_at_once(shared_server: LiveServer) -> None:
    for round_ in range(ROUNDS):
        address = f"127.0.54.{round_ + 1}"
        owner = Client(shared_server, address)
        assert owner.signup(f"merger{round_}@example.org").status == 302
        owner.form("/auth/signout")
        owner.guest()
        assert owner.form(f"/lessons/{LESSON}/quiz/vanishing-gradients", {"option": "1"}).status in (200, 302)
        for step in STEPS:
            assert owner.get(f"/lessons/{LESSON}/{step}").status == 200
        signin = owner.signin(f"merger{round_}@example.org")
        assert "/auth/merge" in (signin.location or ""), signin.location
        token = owner.csrf()
        copies = []
        for action in ("merge", "leave") * 4:
            copy = Client(shared_server, address)
            copy.cookies = dict(owner.cookies)  # the same browser's cookie, sent eight times at once
            body = urllib.parse.urlencode({"csrf_token": token, "action": action}).encode()
            copies.append(lambda c=copy, b=body: c.request(
                "POST", "/auth/merge", b, {"Content-Type": "application/x-www-form-urlencoded"}))
        statuses = _at_once(copies)
        assert all(status < 500 for status in statuses), statuses
        assert set(statuses) <= {302, 409}, statuses
