"""The JSON API's contract: status codes, errors as JSON, authorisation, limits. Grading itself is
swapped for a recording job runner here; tests/web/test_grading.py grades for real."""
from __future__ import annotations

import re

from sqlalchemy import select

from academy.data.db import get_session
from academy.data.models import Submission, User
from tests.support.apps import new_session
from tests.support.paths import EXERCISE


class RecordingRunner:
    """Accepts jobs without running them, noting what the database held at enqueue time."""

    def __init__(self, app):  # noqa: ANN001
        self.app, self.seen = app, []

    def submit(self, kind, object_id: int, key: str = "unkeyed") -> None:  # noqa: ANN001
        with self.app.app_context():
            row = get_session().get(Submission, object_id)
            self.seen.append((kind, object_id, row.status if row else None))

    def recover(self) -> dict[str, int]:
        return {}

    def shutdown(self) -> None:
        pass



def finish_all(app) -> None:  # noqa: ANN001
    """What grading would do: no submission is pending any more, so the learner may submit again."""
    with app.app_context():
        for row in get_session().scalars(select(Submission).where(Submission.status == "queued")):
            row.status = "done"
        get_session().commit()


def recording(app) -> RecordingRunner:  # noqa: ANN001
    runner = RecordingRunner(app)
    app.extensions["academy.jobs"] = runner
    return runner


def test_submission_is_stored_as_queued_before_it_is_enqueued(web, app) -> None:  # noqa: ANN001
    runner = recording(app)
    web.guest()
    response = web.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "print('hi')\n"})
    assert response.status_code == 202
    assert response.json == {"id": 1, "status": "queued"}
    assert response.headers["Location"].endswith("/api/submissions/1")
    assert runner.seen == [("grade_submission", 1, "queued")]
    body = web.api("GET", "/api/submissions/1").json
    assert body["status"] == "queued" and body["result"] is None and body["exercise"] == EXERCISE


def test_api_needs_a_user(app) -> None:  # noqa: ANN001
    response = app.test_client().post("/api/submissions", json={"exercise": EXERCISE, "code": ""})
    assert response.status_code in (400, 401)  # no session: CSRF or sign-in refusal, both JSON
    assert "error" in response.json
    response = app.test_client().get("/api/submissions/1")
    assert response.status_code == 401 and "Bearer" in response.json["error"]
    bad = app.test_client().get("/api/progress", headers={"Authorization": "Bearer dla_nope"})
    assert bad.status_code == 401


def test_session_calls_need_csrf_and_bearer_calls_do_not(web, app) -> None:  # noqa: ANN001
    recording(app)
    web.signup("ada@example.org")
    no_csrf = web.client.post("/api/submissions", json={"exercise": EXERCISE, "code": "x = 1"})
    assert no_csrf.status_code == 400 and "CSRF" in no_csrf.json["error"]
    page = web.post("/auth/tokens", data={"name": "t"}).get_data(as_text=True)
    token = page.split("<code>dla_", 1)[1].split("</code>", 1)[0]
    script = app.test_client()
    ok = script.post("/api/submissions", json={"exercise": EXERCISE, "code": "x = 1"},
                     headers={"Authorization": f"Bearer dla_{token}"})
    assert ok.status_code == 202


def test_bad_requests_get_plain_json_errors(web, app) -> None:  # noqa: ANN001
    recording(app)
    web.guest()
    unknown = web.api("POST", "/api/submissions", {"exercise": "nope/none", "code": "x"})
    assert unknown.status_code == 404 and unknown.json == {"error": "There is no exercise 'nope/none'."}
    assert web.api("POST", "/api/submissions", ["not", "an", "object"]).status_code == 400
    assert web.api("POST", "/api/submissions", {"exercise": EXERCISE}).json["error"].startswith('"code"')
    assert web.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": 5}).status_code == 400
    assert web.api("POST", "/api/submissions", {"exercise": 5, "code": "x"}).status_code == 400
    nul = web.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "x\x00"})
    assert nul.status_code == 400 and "NUL" in nul.json["error"]
    assert web.api("GET", "/api/nothing-here").status_code == 404
    assert web.api("GET", "/api/nothing-here").json["error"]
    with app.app_context():
        assert get_session().scalar(select(Submission)) is None


def test_size_limits_answer_413(web, app) -> None:  # noqa: ANN001
    recording(app)
    web.guest()
    code = "#" * (256 * 1024 + 1)  # fits the request limit, not the code limit
    too_big = web.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": code})
    assert too_big.status_code == 413 and "256 KB" in too_big.json["error"]
    huge = web.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "#" * (400 * 1024)})
    assert huge.status_code == 413 and "256 KB" in huge.json["error"]
    exact = web.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "#" * (256 * 1024)})
    assert exact.status_code == 202


def test_rate_limit_answers_429_with_retry_after(web, make_app) -> None:  # noqa: ANN001
    app = make_app(SUBMISSION_RATE=(3, 60))
    recording(app)
    learner = new_session(app).guest()
    for _ in range(3):
        assert learner.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "x"}).status_code == 202
        finish_all(app)
    limited = learner.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "x"})
    assert limited.status_code == 429
    assert 50 <= int(limited.headers["Retry-After"]) <= 60
    assert "at most 3 per 60 s" in limited.json["error"]
    other = new_session(app).guest()  # the limit is per user
    assert other.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "x"}).status_code == 202


def test_learners_see_only_their_own_submissions(web, app) -> None:  # noqa: ANN001
    recording(app)
    web.guest()
    web.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "secret = 1"})
    other = new_session(app).guest()
    hidden = other.api("GET", "/api/submissions/1")
    assert hidden.status_code == 404 and "secret" not in hidden.get_data(as_text=True)
    assert other.api("GET", "/api/submissions").json == {"submissions": []}
    assert len(web.api("GET", "/api/submissions").json["submissions"]) == 1
    with app.app_context():
        get_session().add(User(email="t@example.org", role="instructor"))
        get_session().commit()
    teacher = new_session(app)
    teacher.client.get("/")
    with app.app_context():
        secret = get_session().get(User, 3).session_secret
    with teacher.client.session_transaction() as session:
        session["user_id"], session["k"] = 3, secret  # what sign-in writes (security.start_session)
    assert teacher.api("GET", "/api/submissions/1").json["result"] is None


def test_exercise_list_is_public(app) -> None:  # noqa: ANN001
    listed = app.test_client().get("/api/exercises").json["exercises"]
    amp = next(e for e in listed if e["id"] == EXERCISE)
    assert amp["entry"] == "train_step" and len(amp["checks"]) == 6


def test_openapi_file_documents_every_api_route(app) -> None:  # noqa: ANN001
    import yaml

    from tests.support.paths import REPO
    spec = yaml.safe_load((REPO / "docs" / "openapi.yaml").read_text())
    documented = {(path, method) for path, ops in spec["paths"].items() for method in ops}
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/"):
            path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule).replace("{submission_id}", "{id}") \
                .replace("{exercise_id}", "{exercise}")
            for method in rule.methods - {"HEAD", "OPTIONS"}:
                assert (path, method.lower()) in documented, f"{method} {path} is missing from docs/openapi.yaml"


PUBLIC = {"index", "static", "auth.signup", "auth.signin", "auth.guest", "auth.signout", "api.list_exercises",
          "i18n.choose",
          # The header's account links for whoever asks (a stranger gets "Sign in / Sign up"): no secret in them.
          "auth.account_links",
          # An LMS's login initiation and launch (each checked by its state, one-time nonce and the platform's
          # signature: tests/lti), the tool's public keys, and a deep-linking answer (bound to the browser's LTI
          # session and to the launch's id). tests/lti/test_lti13.py attacks each.
          "lti.login", "lti.launch", "lti.jwks", "lti.deep_link",
          # A confirmation link from a sign-up's mail: its GET shows a form, its POST needs the account's password
          # or its session, and the token is signed (tests/web/test_email_confirmation.py attacks it).
          "auth.confirm_email"}
# Public lessons (DLA_PUBLIC_LESSONS, on by default): anyone reads them; the first action that needs a
# learner makes a browser session (one holding a CSRF token) a guest. tests/web/test_public_lessons.py
# checks the closed course.
PUBLIC_LESSON_PAGES = {"lessons.resume", "lessons.numbered_step", "lessons.step", "lessons.lesson_end"}
MAKES_A_GUEST = {"api.create_submission", "api.create_run", "lessons.answer", "tutor.ask"}
SAMPLE_ARGS = {"lesson_id": "mixed-precision", "number": 1, "question_id": "vanishing-gradients",
               "submission_id": 1, "exercise_id": EXERCISE, "token_id": 1, "step_id": "meet-autocast",
               "user_id": 1, "platform_id": 1, "token": "not-a-link"}


def test_every_route_checks_who_is_asking(web, app) -> None:  # noqa: ANN001
    """Walks the URL map: nothing outside PUBLIC answers a stranger, nothing instructor-only a learner."""
    recording(app)
    checked = 0
    learner = new_session(app).guest()
    for rule in app.url_map.iter_rules():
        if rule.endpoint in PUBLIC:
            continue
        url = rule.rule
        for name in rule.arguments:
            url = url.replace(f"<{name}>", str(SAMPLE_ARGS[name]))
            url = re.sub(rf"<\w+:{name}>", str(SAMPLE_ARGS[name]), url)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            if rule.endpoint in PUBLIC_LESSON_PAGES | MAKES_A_GUEST:
                visitor = new_session(app)
                answer = (visitor.post(url, data={"option": "1"}) if rule.endpoint == "lessons.answer"
                          else visitor.api(method, url, {"code": "x", "exercise": EXERCISE, "question": "Why?"}))
                # The tutor's question reaches its model server, which these tests do not start (tests/tutor do).
                answered = (200, 202, 301, 302) + ((503,) if rule.endpoint == "tutor.ask" else ())
                assert answer.status_code in answered, (method, url, answer.status_code)
                assert "/auth/signin" not in (answer.location or ""), (method, url)
                signed_in = visitor.client.get("/auth/account").status_code == 200
                assert signed_in == (rule.endpoint in MAKES_A_GUEST), (method, url)
                checked += 1
                continue
            stranger = web.api(method, url, {"code": "x", "exercise": EXERCISE})
            if rule.rule.startswith("/api/"):
                assert stranger.status_code == 401, (method, url)
            else:
                assert stranger.status_code == 302 and "/auth/signin" in stranger.location, (method, url)
            if rule.endpoint.startswith(("instructor.", "lti.platform", "tutor.summary")):
                assert learner.api(method, url, {}).status_code == 403, (method, url)
            checked += 1
    assert checked >= 15
