"""One budget per kind of action, against the running server (small limits, one server for the module): new
guests from one address, however they are made; quiz answers per account and per address; the bytes drafts
keep stored per account and per address, refused with a plain message that loses nothing stored."""
from __future__ import annotations

from typing import Iterator

import pytest
from sqlalchemy import func, select

from academy.data.models import QuizAnswer
from tests.abuse.databases import Database, admin
from tests.support.clients import Client
from tests.support.paths import EXERCISE, LESSON
from tests.support.servers import LiveServer

QUESTION = f"/lessons/{LESSON}/quiz/vanishing-gradients"
OTHER_EXERCISE = "mixed-precision/fix-underflow"


@pytest.fixture(scope="module")
def budget_server(tmp_path_factory: pytest.TempPathFactory, database: Database) -> Iterator[LiveServer]:
    server = database.serve(tmp_path_factory.mktemp("server"), {
        "DLA_LIMIT_GUESTS_PER_ADDRESS": "4 per hour", "DLA_LIMIT_QUIZ_ANSWERS_PER_ACCOUNT": "5 per minute",
        "DLA_LIMIT_QUIZ_ANSWERS_PER_ADDRESS": "8 per minute", "DLA_DRAFT_KB_PER_ACCOUNT": "8",
        "DLA_DRAFT_KB_PER_ADDRESS": "20"})
    yield server
    server.stop()


def _answer(client: Client) -> int:
    return client.form(QUESTION, {"option": "1"}).status


def test_one_guest_budget_whatever_makes_the_guest(budget_server: LiveServer) -> None:
    school = "127.0.15.1"
    assert [Client(budget_server, school).form("/auth/guest").status for _ in range(2)] == [302, 302]
    visitor = Client(budget_server, school)  # a visitor on a public lesson: the first answer makes a guest
    visitor.csrf()
    assert _answer(visitor) == 302 and visitor.get("/auth/account").status == 200
    assert _answer(Client(budget_server, school)) == 302  # the 4th guest of this address
    submitter = Client(budget_server, school)
    submitter.csrf()
    refused = submitter.submit("x = 1\n")  # a 5th, by a first Submit: the same budget, used up
    assert refused.status == 429 and refused.headers["Retry-After"], refused.text
    assert "Too many new guests" in refused.json()["error"]
    assert Client(budget_server, school).form("/auth/guest").status == 429
    assert Client(budget_server, "127.0.15.2").form("/auth/guest").status == 302  # another address


def _stored_answers(server: LiveServer) -> int:
    with admin(server) as db:
        return db.scalar(select(func.count()).select_from(QuizAnswer))


def test_quiz_answers_are_limited_per_account_and_per_address(budget_server: LiveServer) -> None:
    before = _stored_answers(budget_server)
    first = Client(budget_server, "127.0.15.10").guest()
    assert [_answer(first) for _ in range(6)] == [302] * 5 + [429]
    second = Client(budget_server, "127.0.15.10").guest()
    assert [_answer(second) for _ in range(3)] == [302] * 2 + [429]  # 8 from this address, the refused one too
    assert _answer(Client(budget_server, "127.0.15.11").guest()) == 302
    assert _stored_answers(budget_server) - before == 8


def _save(client: Client, exercise: str, code: str) -> tuple[int, str]:
    response = client.api("PUT", f"/api/drafts/{exercise}", {"code": code})
    return response.status, response.json()["error"] if response.status != 204 else ""


def test_drafts_are_bounded_in_stored_bytes_per_account_and_per_address(budget_server: LiveServer) -> None:
    home = "127.0.15.20"
    learner = Client(budget_server, home).guest()
    first = "# first draft\n" + "#" * 5000
    assert _save(learner, EXERCISE, first)[0] == 204
    status, message = _save(learner, OTHER_EXERCISE, "#" * 5000)  # 10 KB for this account: over its 8
    assert status == 413 and "10 KB, more than the 8 KB an account keeps" in message
    assert "was not saved; the version saved before is kept" in message
    assert _save(learner, EXERCISE, first + "#" * 4000)[0] == 413  # a bigger version of a stored one neither
    assert "# first draft" in learner.get(f"/lessons/{LESSON}/amp-step").text  # nothing stored was lost
    assert _save(learner, OTHER_EXERCISE, "#" * 2000)[0] == 204  # 7 KB: fits
    assert _save(learner, EXERCISE, "# smaller")[0] == 204  # a smaller draft always fits

    # The address: every guest (and account) behind it, however many: 20 KB here.
    others = [Client(budget_server, home).guest() for _ in range(3)]
    assert _save(others[0], EXERCISE, "#" * 6000)[0] == 204
    assert _save(others[1], EXERCISE, "#" * 6000)[0] == 204
    status, message = _save(others[2], EXERCISE, "#" * 8000)  # within its account's 8 KB, not the address's
    assert status == 413 and "The drafts saved from your network" in message
    assert _save(Client(budget_server, "127.0.15.21").guest(), EXERCISE, "#" * 6000)[0] == 204  # elsewhere
