"""Submissions graded for real in the background, and the grader failing without losing anything."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from academy import jobs
from academy.data.db import get_session
from academy.data.models import Submission, User
from academy.web.shown import GRADER_FAILED
from grader.core.result import validate_result
from tests.support.apps import new_session, wait_for
from tests.support.paths import EXERCISE, REPO

STARTER = (REPO / "exercises" / "mixed-precision" / "amp-step" / "starter.py").read_text()


@pytest.mark.slow
def test_api_submission_is_graded_in_the_background(web, app) -> None:  # noqa: ANN001
    web.signup("ada@example.org")
    page = web.post("/auth/tokens", data={"name": "t"}).get_data(as_text=True)
    token = "dla_" + page.split("<code>dla_", 1)[1].split("</code>", 1)[0]
    script = app.test_client()
    bearer = {"Authorization": f"Bearer {token}"}
    created = script.post("/api/submissions", json={"exercise": EXERCISE, "code": STARTER}, headers=bearer)
    assert created.status_code == 202
    assert script.get(f"/api/submissions/{created.json['id']}", headers=bearer).json["status"] in (
        "queued", "running")  # the request returned while grading goes on
    wait_for(app, created.json["id"])
    body = script.get(f"/api/submissions/{created.json['id']}", headers=bearer).json
    assert body["status"] == "done" and body["error"] is None
    result = body["result"]
    validate_result(result)  # the same object `grader check --json` prints
    assert result["exercise"] == EXERCISE and result["status"] == "failed" and result["sandbox"] == "local"
    failed = {c["id"] for c in result["checks"] if c["status"] == "failed"}
    assert {"autocast-scope", "scaled-backward"} <= failed
    progress = script.get("/api/progress", headers=bearer).json
    assert next(e for e in progress["exercises"] if e["id"] == EXERCISE) == {
        "id": EXERCISE, "passed": False, "attempts": 1}


def test_a_failing_grader_keeps_the_submission_and_says_so(make_app) -> None:  # noqa: ANN001
    app = make_app(SANDBOX="no-such-sandbox")
    learner = new_session(app).guest()
    created = learner.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": STARTER})
    submission = wait_for(app, created.json["id"], timeout=30)
    assert submission.status == "error" and submission.code == STARTER
    body = learner.api("GET", f"/api/submissions/{submission.id}").json
    assert body["status"] == "error" and body["result"]["status"] == "infra-error"
    # The learner reads that the platform failed; what failed (the sandbox's words) is kept for instructors.
    assert body["error"] == body["result"]["error"]["message"] == GRADER_FAILED
    assert "unknown sandbox" not in json.dumps(body)
    assert submission.error_message.startswith("The grader failed: unknown sandbox 'no-such-sandbox'")
    run = learner.api("POST", "/api/runs", {"exercise": EXERCISE, "code": STARTER}).json
    wait_for(app, run["id"], timeout=30)
    ran = learner.api("GET", f"/api/runs/{run['id']}").json
    assert ran["status"] == "error" and ran["error"] == GRADER_FAILED, ran


def test_a_vanished_exercise_ends_as_a_plain_error(app) -> None:  # noqa: ANN001
    with app.app_context():
        db = get_session()
        db.add(User(is_guest=True))
        db.add(Submission(user_id=1, exercise_id="gone/away", code="x = 1"))
        db.commit()
        jobs.grade_submission(1)
        submission = db.get(Submission, 1)
        db.refresh(submission)
        assert submission.status == "error"
        assert submission.error_message == "The exercise 'gone/away' no longer exists."
        jobs.grade_submission(1)  # a repeated job leaves a finished submission alone
        assert submission.status == "error"


def test_unfinished_submissions_are_graded_after_a_restart(make_app) -> None:  # noqa: ANN001
    first = make_app(REQUEUE_ON_START=False, SANDBOX="no-such-sandbox")
    with first.app_context():
        db = get_session()
        db.add_all([User(is_guest=True), User(is_guest=True)])  # one pending submission per learner
        db.add_all([Submission(user_id=1, exercise_id=EXERCISE, code="a = 1", status="queued"),
                    Submission(user_id=2, exercise_id=EXERCISE, code="b = 1", status="running")])
        db.commit()
    second = make_app(SANDBOX="no-such-sandbox")
    with second.app_context():
        assert get_session().scalar(select(Submission.status).where(Submission.id == 2)) == "running"  # not yet
    second.test_client().get("/api/exercises")  # the serving process's first request picks both up again
    for submission_id in (1, 2):
        assert wait_for(second, submission_id, timeout=30).status == "error"
    with second.app_context():
        assert [s.code for s in get_session().scalars(select(Submission))] == ["a = 1", "b = 1"]


@pytest.mark.slow
def test_learner_code_cannot_read_the_platform_database(web, app) -> None:  # noqa: ANN001
    database = f"{app.instance_path}/academy.sqlite"
    code = ("def train_step(model, optimizer, scaler, loss_fn, x, y):\n"
            f"    data = open({database!r}, 'rb').read()\n"
            "    raise RuntimeError(f'read {len(data)} bytes')\n")
    web.guest()
    created = web.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": code})
    result = wait_for(app, created.json["id"]).result
    message = result["checks"][0]["message"]
    assert "FileNotFoundError on line 2" in message and "bytes" not in message
