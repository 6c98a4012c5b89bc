"""Hints on request, attempt history, the worked solution, guests signing out and merging (HTTP)."""
from __future__ import annotations

import json
from pathlib import Path

from flask import Flask

from academy.data.db import get_session
from academy.data.models import Draft, HintReveal, QuizAnswer, StepVisit, Submission, User
from grader.core.course import load_course
from grader.core.protocol import RawVerdict, Status
from grader.core.result import build_result
from tests.support.apps import WebSession, new_session, wait_for
from tests.support.paths import EXERCISE, LESSON, SOLUTION


def _store(app: Flask, email_or_guest: WebSession, code: str, failed: dict[str, str] | None = None,
           exercise: str = EXERCISE) -> int:
    """A finished submission of the signed-in learner, with a result built the real way (build_result)."""
    user_id = email_or_guest.api("GET", "/api/progress").get_json()["user"]
    with app.app_context():
        db = get_session()
        user = db.get(User, int(user_id.split("#")[1])) if user_id.startswith("guest #") else \
            db.query(User).filter_by(email=user_id).one()
        ex = load_course(Path(app.config["EXERCISES_DIR"]) if app.config.get("EXERCISES_DIR") else None) \
            .exercises[exercise]
        failed = failed or {}
        raw = RawVerdict(status=Status.FAILED if failed else Status.PASSED, device="cpu",
                         checks={c.id: {"passed": c.id not in failed, "message": failed.get(c.id, ""),
                                        "line": None} for c in ex.checks})
        result = build_result(ex, raw, "local", 0.5)
        row = Submission(user_id=user.id, exercise_id=exercise, code=code, status="done",
                         passed=result["passed"], result_json=json.dumps(result))
        db.add(row)
        db.commit()
        return row.id


def test_hints_are_revealed_one_by_one_and_recorded(make_app, exercises_copy) -> None:  # noqa: ANN001
    meta = exercises_copy / EXERCISE / "exercise.yaml"
    text = meta.read_text()
    first = "    hint: Call `scaler.scale(loss).backward()` instead of `loss.backward()`.\n"
    assert first in text
    meta.write_text(text.replace(first, "    hints:\n      - Call `scaler.scale(loss).backward()` instead of "
                                        "`loss.backward()`.\n      - The second hint.\n      - The third hint.\n"))
    app = make_app(EXERCISES_DIR=str(exercises_copy))
    web = new_session(app).guest()
    sub = _store(app, web, "x = 1", {"scaled-backward": "Backward ran on the raw loss."})
    result = web.api("GET", f"/api/submissions/{sub}").get_json()["result"]
    check = next(c for c in result["checks"] if c["id"] == "scaled-backward")
    assert check["message"] == "Backward ran on the raw loss."
    assert check["hints"] == [] and check["hints_total"] == 3 and check["hint"] == ""
    assert "scaler.scale(loss).backward()" not in json.dumps(result) and "second hint" not in json.dumps(result)
    for shown in (1, 2, 3, 3):
        body = web.api("POST", f"/api/submissions/{sub}/hints", {"check": "scaled-backward"}).get_json()
        assert len(body["hints"]) == shown and body["hints_total"] == 3
    assert body["hints"][1] == "The second hint."
    result = web.api("GET", f"/api/submissions/{sub}").get_json()["result"]
    assert next(c for c in result["checks"] if c["id"] == "scaled-backward")["hints"] == body["hints"]
    with app.app_context():
        assert get_session().query(HintReveal).filter_by(submission_id=sub).count() == 3
    teacher = new_session(app)
    with app.app_context():
        from academy.web.auth import create_account

        create_account("teacher@example.org", "password123", role="instructor")
        get_session().commit()
        learner_id = get_session().get(Submission, sub).user_id
    teacher.signin("teacher@example.org")
    page = teacher.client.get(f"/instructor/learners/{learner_id}").get_data(as_text=True)
    assert '<td class="hints">3</td>' in page  # the instructor sees how many hints were opened
    # A passed check has no hint to show; someone else's submission is not found.
    assert web.api("POST", f"/api/submissions/{sub}/hints", {"check": "runs"}).status_code == 404
    stranger = new_session(app).guest()
    assert stranger.api("POST", f"/api/submissions/{sub}/hints", {"check": "scaled-backward"}).status_code == 404


def test_one_hint_in_exercise_yaml_is_a_one_item_list() -> None:
    course = load_course()
    check = next(c for c in course.exercises[EXERCISE].checks if c.id == "scaled-backward")
    assert check.hints == (check.hint,) and "scaler.scale(loss)" in check.hint


def test_history_code_and_diff(app) -> None:  # noqa: ANN001
    web = new_session(app).guest()
    first = _store(app, web, "a = 1\nb = 2\n", {"runs": "no"})
    second = _store(app, web, "a = 1\nb = 3\n")
    listed = web.api("GET", f"/api/submissions?exercise={EXERCISE}").get_json()["submissions"]
    assert [s["id"] for s in listed] == [second, first]
    assert listed[0]["result"]["score"] == 1.0 and listed[1]["result"]["status"] == "failed"
    assert web.api("GET", f"/api/submissions/{first}").get_json()["code"] == "a = 1\nb = 2\n"
    diff = web.api("GET", f"/api/submissions/{second}/diff").get_json()
    assert diff["previous"] == first and "-b = 2\n+b = 3\n" in diff["diff"]
    assert web.api("GET", f"/api/submissions/{first}/diff").get_json() == {"id": first, "previous": None, "diff": ""}
    assert new_session(app).guest().api("GET", f"/api/submissions/{first}/diff").status_code == 404


def test_solution_after_passing(app) -> None:  # noqa: ANN001
    web = new_session(app).guest()
    url = f"/api/exercises/{EXERCISE}/solution"
    closed = web.api("GET", url)
    assert closed.status_code == 403 and "once you pass" in closed.get_json()["error"]
    _store(app, web, "x = 1", {"runs": "no"})
    assert web.api("GET", url).status_code == 403
    _store(app, web, SOLUTION)
    body = web.api("GET", url).get_json()
    assert body["code"] == SOLUTION and "<code>scaler.scale(loss)</code>" in body["explanation_html"]


def test_solution_after_n_attempts(make_app, exercises_copy) -> None:  # noqa: ANN001
    meta = exercises_copy / EXERCISE / "exercise.yaml"
    meta.write_text(meta.read_text() + "solution_after: 2\n")
    app = make_app(EXERCISES_DIR=str(exercises_copy))
    web = new_session(app).guest()
    url = f"/api/exercises/{EXERCISE}/solution"
    _store(app, web, "x = 1", {"runs": "no"})
    assert "after 2 submissions" in web.api("GET", url).get_json()["error"]
    _store(app, web, "x = 2", {"runs": "no"})
    assert web.api("GET", url).status_code == 200


def test_every_exercise_has_a_solution_explanation() -> None:
    for exercise in load_course().exercises.values():
        assert len(exercise.solution_markdown().split()) > 40, exercise.id


def test_guest_sign_out_warns(app) -> None:  # noqa: ANN001
    web = new_session(app).guest()
    page = web.client.get(f"/lessons/{LESSON}/amp-step").get_data(as_text=True)
    assert f'href="/auth/signout?next=/lessons/{LESSON}/amp-step"' in page  # and back there on Cancel
    warning = web.client.get("/auth/signout").get_data(as_text=True)
    assert "Signing out loses your progress" in warning and "/auth/signup" in warning
    web.signup("ada@example.org")
    page = web.client.get("/auth/signout").get_data(as_text=True)
    assert "loses your progress" not in page


def test_sign_in_from_a_guest_session_merges(app) -> None:  # noqa: ANN001
    ada = new_session(app)
    ada.signup("ada@example.org")
    ada.client.get(f"/lessons/{LESSON}/meet-autocast")
    ada.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"})
    ada.api("PUT", f"/api/drafts/{EXERCISE}", {"code": "old draft"})
    ada.post("/auth/signout")

    web = new_session(app).guest()
    web.client.get(f"/lessons/{LESSON}/what-mixed-precision-means")
    web.client.get(f"/lessons/{LESSON}/meet-autocast")
    web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "2"})  # wrong, and ada answered
    web.api("PUT", f"/api/drafts/{EXERCISE}", {"code": "guest draft"})  # newer than ada's: it wins
    sub = _store(app, web, SOLUTION)
    reply = web.signin("ada@example.org")
    assert "/auth/merge" in reply.location
    offer = web.client.get(reply.location).get_data(as_text=True)
    assert "Keep your guest progress?" in offer and "1 submissions" in offer
    done = web.post("/auth/merge", data={"action": "merge", "next": "/"})
    assert done.status_code == 302
    with app.app_context():
        db = get_session()
        ada_id = db.query(User).filter_by(email="ada@example.org").one().id
        assert db.get(Submission, sub).user_id == ada_id
        steps = {v.step_id for v in db.query(StepVisit).filter_by(user_id=ada_id)}
        assert {"what-mixed-precision-means", "meet-autocast"} <= steps
        assert db.query(StepVisit).filter_by(user_id=ada_id, step_id="meet-autocast").count() == 1
        assert db.query(Draft).filter_by(user_id=ada_id).one().code == "guest draft"  # the newer one
        answers = db.query(QuizAnswer).filter_by(user_id=ada_id).all()
        assert [(a.option_id, a.correct) for a in answers] == [("1", True)]  # ada's first try stands
        assert db.query(User).filter_by(is_guest=True).count() == 0
    assert web.api("GET", "/api/progress").get_json()["exercises"][0]["passed"]


def test_sign_in_from_a_guest_session_without_merging(app) -> None:  # noqa: ANN001
    ada = new_session(app)
    ada.signup("ada@example.org")
    ada.post("/auth/signout")
    web = new_session(app).guest()
    sub = _store(app, web, SOLUTION)
    reply = web.signin("ada@example.org")
    web.post("/auth/merge", data={"action": "discard"})
    with app.app_context():
        assert get_session().get(Submission, sub).user.is_guest
    assert web.client.get("/auth/merge").status_code == 302  # the offer is gone
    # A guest with nothing done is not asked.
    other = new_session(app).guest()
    assert "/auth/merge" not in other.signin("ada@example.org").location
    assert reply.status_code == 302


def test_run_shows_output_return_value_and_error_and_is_no_attempt(app) -> None:  # noqa: ANN001
    """A Run through the app's sandbox (local): printed output, the return value's repr, an error with its line;
    it shares the one-pending-job rule with submissions and never counts as an attempt."""
    web = new_session(app).guest()
    code = SOLUTION.replace("    return loss", "    print('scale', scaler.get_scale())\n    return loss")
    # Long enough (1.5 s) that the Run is surely still pending when the submission below arrives.
    code = code.replace("import torch\n", "import time\n\nimport torch\n\ntime.sleep(1.5)\n", 1)
    reply = web.api("POST", "/api/runs", {"exercise": EXERCISE, "code": code})
    assert reply.status_code == 202 and reply.headers["Location"] == f"/api/runs/{reply.get_json()['id']}"
    run_id = reply.get_json()["id"]
    # One pending job per learner, whichever kind.
    busy = web.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": SOLUTION})
    assert busy.status_code == 429 and "Run is still going" in busy.get_json()["error"]
    wait_for(app, run_id)
    run = web.api("GET", f"/api/runs/{run_id}").get_json()
    assert run["status"] == "done" and run["run"]["status"] == "ran", run
    assert run["run"]["output"].startswith("scale ") and run["run"]["returned"].startswith("tensor(")
    assert web.api("GET", f"/api/submissions/{run_id}").status_code == 404  # a Run is no submission
    broken = SOLUTION.replace("    scaler.update()\n", "    scaler.update()\n    raise ValueError('mine')\n")
    line = broken.splitlines().index("    raise ValueError('mine')") + 1
    second = web.api("POST", "/api/runs", {"exercise": EXERCISE, "code": broken}).get_json()["id"]
    wait_for(app, second)
    failed = web.api("GET", f"/api/runs/{second}").get_json()["run"]
    assert failed["status"] == "error" and failed["returned"] is None
    assert failed["error"]["line"] == line and "ValueError" in failed["error"]["message"]
    progress = web.api("GET", "/api/progress").get_json()
    assert next(e for e in progress["exercises"] if e["id"] == EXERCISE)["attempts"] == 0
    assert web.api("GET", f"/api/submissions?exercise={EXERCISE}").get_json()["submissions"] == []
    assert new_session(app).guest().api("GET", f"/api/runs/{second}").status_code == 404


def test_runs_have_their_own_rate_limit(make_app) -> None:  # noqa: ANN001
    app = make_app(LIMIT_RUNS_PER_ACCOUNT="2 per minute")
    web = new_session(app).guest()
    for _ in range(2):
        assert web.api("POST", "/api/runs", {"exercise": "no/such", "code": "x"}).status_code == 404
    refused = web.api("POST", "/api/runs", {"exercise": "no/such", "code": "x"})
    assert refused.status_code == 429 and "Too many Runs" in refused.get_json()["error"]
    # Submissions are limited apart.
    assert web.api("POST", "/api/submissions", {"exercise": "no/such", "code": "x"}).status_code == 404
