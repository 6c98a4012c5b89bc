"""The JSON API's contract: status codes, errors as JSON, authorisation, limits. Grading itself is
swapped for a recording job runner here; tests/web/test_grading.py grades for real."""
from __future__ import annotations

from sqlalchemy import select

from academy.db import get_session
from academy.models import Submission, User
from tests.web.conftest import EXERCISE, new_browser


class RecordingRunner:
    """Accepts jobs without running them, noting what the database held at enqueue time."""

    def __init__(self, app):  # noqa: ANN001
        self.app, self.seen = app, []

    def submit(self, job, object_id: int) -> None:  # noqa: ANN001
        with self.app.app_context():
            row = get_session().get(Submission, object_id)
            self.seen.append((job.__name__, object_id, row.status if row else None))

    pool = type("NoPool", (), {"shutdown": staticmethod(lambda wait=True: None)})()


def recording(app) -> RecordingRunner:  # noqa: ANN001
    runner = RecordingRunner(app)
    app.extensions["academy.jobs"] = runner
    return runner


def test_submission_is_stored_as_queued_before_it_is_enqueued(browser, app) -> None:  # noqa: ANN001
    runner = recording(app)
    browser.guest()
    response = browser.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "print('hi')\n"})
    assert response.status_code == 202
    assert response.json == {"id": 1, "status": "queued"}
    assert response.headers["Location"].endswith("/api/submissions/1")
    assert runner.seen == [("grade_submission", 1, "queued")]
    body = browser.api("GET", "/api/submissions/1").json
    assert body["status"] == "queued" and body["result"] is None and body["exercise"] == EXERCISE


def test_api_needs_a_user(app) -> None:  # noqa: ANN001
    response = app.test_client().post("/api/submissions", json={"exercise": EXERCISE, "code": ""})
    assert response.status_code in (400, 401)  # no session: CSRF or sign-in refusal, both JSON
    assert "error" in response.json
    response = app.test_client().get("/api/submissions/1")
    assert response.status_code == 401 and "Bearer" in response.json["error"]
    bad = app.test_client().get("/api/progress", headers={"Authorization": "Bearer dla_nope"})
    assert bad.status_code == 401


def test_session_calls_need_csrf_and_bearer_calls_do_not(browser, app) -> None:  # noqa: ANN001
    recording(app)
    browser.signup("ada@example.org")
    no_csrf = browser.client.post("/api/submissions", json={"exercise": EXERCISE, "code": "x = 1"})
    assert no_csrf.status_code == 400 and "CSRF" in no_csrf.json["error"]
    page = browser.post("/auth/tokens", data={"name": "t"}).get_data(as_text=True)
    token = page.split("<code>dla_", 1)[1].split("</code>", 1)[0]
    script = app.test_client()
    ok = script.post("/api/submissions", json={"exercise": EXERCISE, "code": "x = 1"},
                     headers={"Authorization": f"Bearer dla_{token}"})
    assert ok.status_code == 202


def test_bad_requests_get_plain_json_errors(browser, app) -> None:  # noqa: ANN001
    recording(app)
    browser.guest()
    unknown = browser.api("POST", "/api/submissions", {"exercise": "nope/none", "code": "x"})
    assert unknown.status_code == 404 and unknown.json == {"error": "There is no exercise 'nope/none'."}
    assert browser.api("POST", "/api/submissions", ["not", "an", "object"]).status_code == 400
    assert browser.api("POST", "/api/submissions", {"exercise": EXERCISE}).json["error"].startswith('"code"')
    assert browser.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": 5}).status_code == 400
    assert browser.api("POST", "/api/submissions", {"exercise": 5, "code": "x"}).status_code == 400
    nul = browser.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "x\x00"})
    assert nul.status_code == 400 and "NUL" in nul.json["error"]
    assert browser.api("GET", "/api/nothing-here").status_code == 404
    assert browser.api("GET", "/api/nothing-here").json["error"]
    with app.app_context():
        assert get_session().scalar(select(Submission)) is None


def test_size_limits_answer_413(browser, app) -> None:  # noqa: ANN001
    recording(app)
    browser.guest()
    code = "#" * (256 * 1024 + 1)  # fits the request limit, not the code limit
    too_big = browser.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": code})
    assert too_big.status_code == 413 and "256 KB" in too_big.json["error"]
    huge = browser.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "#" * (400 * 1024)})
    assert huge.status_code == 413 and "256 KB" in huge.json["error"]
    exact = browser.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "#" * (256 * 1024)})
    assert exact.status_code == 202


def test_rate_limit_answers_429_with_retry_after(browser, make_app) -> None:  # noqa: ANN001
    app = make_app(SUBMISSION_RATE=(3, 60))
    recording(app)
    learner = new_browser(app).guest()
    for _ in range(3):
        assert learner.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "x"}).status_code == 202
    limited = learner.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "x"})
    assert limited.status_code == 429
    assert 50 <= int(limited.headers["Retry-After"]) <= 60
    assert "at most 3 per 60 s" in limited.json["error"]
    other = new_browser(app).guest()  # the limit is per user
    assert other.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "x"}).status_code == 202


def test_learners_see_only_their_own_submissions(browser, app) -> None:  # noqa: ANN001
    recording(app)
    browser.guest()
    browser.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "secret = 1"})
    other = new_browser(app).guest()
    hidden = other.api("GET", "/api/submissions/1")
    assert hidden.status_code == 404 and "secret" not in hidden.get_data(as_text=True)
    assert other.api("GET", "/api/submissions").json == {"submissions": []}
    assert len(browser.api("GET", "/api/submissions").json["submissions"]) == 1
    with app.app_context():
        get_session().add(User(email="t@example.org", role="instructor"))
        get_session().commit()
    teacher = new_browser(app)
    teacher.client.get("/")
    with teacher.client.session_transaction() as session:
        session["user_id"] = 3
    assert teacher.api("GET", "/api/submissions/1").json["result"] is None


def test_exercise_list_is_public(app) -> None:  # noqa: ANN001
    listed = app.test_client().get("/api/exercises").json["exercises"]
    amp = next(e for e in listed if e["id"] == EXERCISE)
    assert amp["entry"] == "train_step" and len(amp["checks"]) == 6
