"""Learners see learner text only, against the running server: a check that breaks leaves, for the exercise's
author, the hidden test's name and the exception's text (`problems`), beside the sandbox's notes and the seed;
the learner's own API answers (the verdict, the history) carry none of it, instructors keep all of it."""
from __future__ import annotations

import json
import shutil
from typing import Iterator

import pytest
from sqlalchemy import update

from academy.data.models import User
from tests.abuse.databases import Database, admin
from tests.support.clients import Client
from tests.support.paths import EXERCISE, EXERCISES, SOLUTION
from tests.support.servers import LiveServer

pytestmark = pytest.mark.slow  # one real grading

SLIP = '''
from grader.checks.grading.judging import check


@check("runs")
def test_an_authors_slip(observed):
    raise KeyError("params_after_of_a_hidden_test")
'''


@pytest.fixture(scope="module")
def slipping_server(tmp_path_factory: pytest.TempPathFactory, database: Database) -> Iterator[LiveServer]:
    """A course whose amp-step has a check that breaks (an author's mistake), whatever the code does."""
    folder = tmp_path_factory.mktemp("server")
    shutil.copytree(EXERCISES, folder / "exercises")
    (folder / "exercises" / EXERCISE / "checks" / "test_authors_slip.py").write_text(SLIP)
    server = database.serve(folder, {"DLA_EXERCISES": str(folder / "exercises")})
    yield server
    server.stop()


def test_a_learner_never_reads_what_is_for_the_author(slipping_server: LiveServer) -> None:
    learner = Client(slipping_server, "127.0.16.1").guest()
    submitted = learner.submit(SOLUTION)
    assert submitted.status == 202, submitted.text
    mine = learner.wait(submitted.json()["id"], timeout=180)
    listed = learner.api("GET", "/api/submissions").json()["submissions"][0]
    for shown in (mine["result"], listed["result"]):
        assert {"problems", "grader_notes", "seed"}.isdisjoint(shown), sorted(shown)
        text = json.dumps(shown)
        assert "params_after_of_a_hidden_test" not in text and "test_authors_slip" not in text
        runs = next(c for c in shown["checks"] if c["id"] == "runs")
        assert runs["status"] == "failed" and runs["message"] == "The check could not evaluate your code's behaviour."
    assert "params_after_of_a_hidden_test" not in learner.get(f"/lessons/{EXERCISE}").text  # the exercise's page

    teacher = Client(slipping_server, "127.0.16.2")
    assert teacher.signup("author@example.org").status == 302
    with admin(slipping_server) as db:
        db.execute(update(User).where(User.email == "author@example.org").values(role="instructor"))
    full = teacher.api("GET", f"/api/submissions/{mine['id']}").json()["result"]
    assert any("test_authors_slip.py::test_an_authors_slip" in p and "params_after_of_a_hidden_test" in p
               for p in full["problems"]), full.get("problems")
    assert full["grader_notes"] and isinstance(full["seed"], int)
    assert "params_after_of_a_hidden_test" in teacher.get(f"/instructor/exercises/{EXERCISE}").text
