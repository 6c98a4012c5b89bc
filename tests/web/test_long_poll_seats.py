"""The long-poll's seats (academy/jobs/waiting.py) are shared out: one client address holds at most half of them,
so guests made in bulk from one address cannot hold every seat; the rest of its requests answer at once, still
pending, and its browsers poll."""
from __future__ import annotations

import time
from typing import Any

from academy.jobs import waiting
from tests.support.apps import WebSession, new_session
from tests.support.held_jobs import CODE, get_in_thread
from tests.support.paths import EXERCISE


def _waiting_now(app, count: int) -> int:  # noqa: ANN001
    """How many requests wait, once `count` do (or after 10 s)."""
    deadline = time.monotonic() + 10
    while waiting.finishes(app).waiting_now < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return waiting.finishes(app).waiting_now


def test_four_guests_of_one_address_leave_seats_to_everyone_else(make_app, hold, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(waiting, "RECHECK_S", 60.0)
    app = make_app(LONG_POLL_WAITERS=4, GRADING_WORKERS=2)
    held = hold(app)
    guests = [new_session(app).guest() for _ in range(4)]  # all from 127.0.0.1, the test client's address
    other = WebSession(app.test_client())
    other.client.environ_base["REMOTE_ADDR"] = "192.0.2.7"  # another learner, from another address
    other.guest()
    ids = [who.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": CODE}).json["id"]
           for who in (*guests, other)]
    assert held.started.wait(30)
    answers: list[Any] = []
    threads = [get_in_thread(guest, f"/api/submissions/{row}?wait=20", answers) for guest, row in zip(guests[:2], ids)]
    assert _waiting_now(app, 2) == 2
    for guest, row in zip(guests[2:], ids[2:4]):  # the address holds its two seats: these answer at once
        started = time.monotonic()
        assert guest.api("GET", f"/api/submissions/{row}?wait=20").json["status"] in ("queued", "running")
        assert time.monotonic() - started < 5
    threads.append(get_in_thread(other, f"/api/submissions/{ids[4]}?wait=20", answers))
    assert _waiting_now(app, 3) == 3, "the other address's learner must find a seat"
    assert not answers
    held.release.set()
    for thread in threads:
        thread.join(30)
    assert len(answers) == 3
    assert waiting.finishes(app).waiting_now == 0 and not waiting.finishes(app)._where  # every seat given back
