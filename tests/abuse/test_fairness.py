"""Fair, bounded grading and the rate limits, against the running server (in-process grading runner).

The one-pending-submission rule is the database's (a partial unique index): it is tested on SQLite and on
PostgreSQL. The grading turns (the runner's, in memory) and the rate limits (Flask-Limiter's counters, in
memory or Redis) hold nothing in the database: those tests run on SQLite only, to keep the suite short."""
from __future__ import annotations

import threading
from datetime import datetime

import pytest

from tests.support.clients import Client
from tests.support.paths import EXERCISE, SOLUTION
from tests.support.servers import SLEEPER, LiveServer

pytestmark = pytest.mark.slow
NOT_THE_DATABASES = pytest.mark.parametrize("database", ["sqlite"], indirect=True)


def test_thirty_concurrent_submissions_of_one_learner_store_one(serve) -> None:  # noqa: ANN001
    # The per-minute limit far away: what holds here is the database's one-pending-submission rule.
    server: LiveServer = serve(DLA_SUBMISSIONS_PER_MINUTE="1000")
    learner = Client(server, "127.0.3.1").guest()
    token = learner.csrf()
    body = ('{"exercise": "%s", "code": "import time\\ntime.sleep(600)\\n"}' % EXERCISE).encode()
    answers: list = []
    barrier = threading.Barrier(30)

    def post() -> None:
        barrier.wait()
        answers.append(learner.request("POST", "/api/submissions", body,
                                       {"Content-Type": "application/json", "X-CSRF-Token": token}))
    threads = [threading.Thread(target=post) for _ in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = sorted(a.status for a in answers)
    assert statuses == [202] + [429] * 29, statuses
    refused = next(a for a in answers if a.status == 429)
    assert "still being graded" in refused.json()["error"] and "does not replace" in refused.json()["error"]
    assert refused.headers["Retry-After"]
    assert len(learner.api("GET", "/api/submissions").json()["submissions"]) == 1


def _finished(state: dict) -> datetime:
    return datetime.fromisoformat(state["finished_at"].rstrip("Z"))


@NOT_THE_DATABASES
def test_guests_minted_by_one_client_share_one_turn(serve) -> None:  # noqa: ANN001
    """Six hostile guests from one address, each holding a grader as long as it may, then a learner from
    elsewhere: the learner's verdict comes while the hostile jobs take their one turn at a time."""
    server: LiveServer = serve()
    hostile = [Client(server, "127.0.3.2").guest() for _ in range(6)]
    ids = []
    for guest in hostile:
        response = guest.submit(SLEEPER)
        assert response.status == 202, response.text
        ids.append(response.json()["id"])
    learner = Client(server, "127.0.3.3").guest()
    mine = learner.submit(SOLUTION).json()["id"]
    verdict = learner.wait(mine, timeout=180)
    assert verdict["status"] == "done" and verdict["result"]["passed"], verdict
    hostile_done = [state for guest, sid in zip(hostile, ids)
                    if (state := guest.api("GET", f"/api/submissions/{sid}").json())["finished_at"]]
    # First come, first served would grade the learner after all six (about 30 s on 2 graders);
    # in turns, at most the one hostile job that was running beside it has finished first.
    assert sum(_finished(state) < _finished(verdict) for state in hostile_done) <= 1, (verdict, hostile_done)


@NOT_THE_DATABASES
def test_a_classroom_behind_one_address_works_and_guest_minting_stops(serve) -> None:  # noqa: ANN001
    server: LiveServer = serve()  # the default limits
    school = "127.0.3.10"
    for n in range(40):
        pupil = Client(server, school).guest()
        assert pupil.api("PUT", f"/api/drafts/{EXERCISE}", {"code": f"# pupil {n}"}).status == 204
        submitted = pupil.submit("x = 1\n")
        assert submitted.status == 202, (n, submitted.text)
    for n in range(20):
        assert Client(server, school).signup(f"pupil{n}@example.org").status == 302, n
    # Sixty guests in ten minutes is the generous per-address limit; the 61st must wait.
    created = [Client(server, school).form("/auth/guest").status for _ in range(21)]
    assert created[:20] == [302] * 20 and created[20] == 429, created
    assert Client(server, "127.0.3.11").form("/auth/guest").status == 302  # another address is not affected


@NOT_THE_DATABASES
def test_drafts_and_submissions_are_limited(serve) -> None:  # noqa: ANN001
    server: LiveServer = serve(DLA_LIMIT_SUBMISSIONS_PER_ADDRESS="4 per minute",
                               DLA_LIMIT_DRAFTS_PER_ACCOUNT="30 per minute")
    writer = Client(server, "127.0.3.20").guest()
    token = writer.csrf()
    big = ('{"code": "%s"}' % ("#" * 200_000)).encode()
    statuses = [writer.request("PUT", f"/api/drafts/{EXERCISE}", big,
                               {"Content-Type": "application/json", "X-CSRF-Token": token}).status
                for _ in range(32)]
    assert statuses[:30] == [204] * 30 and statuses[30:] == [429, 429], statuses
    # Submissions: per account (DLA_SUBMISSIONS_PER_MINUTE) and per address; new guests do not reset it.
    answers = [Client(server, "127.0.3.21").guest().submit("x = 1\n") for _ in range(5)]
    assert [a.status for a in answers] == [202] * 4 + [429], [a.text for a in answers]
    assert answers[-1].headers["Retry-After"] and "from your network" in answers[-1].json()["error"]


@NOT_THE_DATABASES
def test_client_address_comes_from_the_trusted_proxy_only(serve) -> None:  # noqa: ANN001
    behind_proxy: LiveServer = serve(DLA_TRUSTED_PROXIES="1", DLA_LIMIT_GUESTS_PER_ADDRESS="2 per hour")
    first = [Client(behind_proxy, forwarded_for="203.0.113.1").form("/auth/guest").status for _ in range(3)]
    assert first == [302, 302, 429], first
    assert Client(behind_proxy, forwarded_for="203.0.113.2").form("/auth/guest").status == 302
    # Without a trusted proxy the header is the client's own word: it changes nothing.
    direct: LiveServer = serve(DLA_LIMIT_GUESTS_PER_ADDRESS="2 per hour")
    spoofed = [Client(direct, forwarded_for=f"203.0.113.{n}").form("/auth/guest").status for n in range(3)]
    assert spoofed == [302, 302, 429], spoofed
