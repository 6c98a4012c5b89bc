"""Public lessons (DLA_PUBLIC_LESSONS): anyone reads every step; the first action that needs a learner
makes a browser session a guest; an API request without credentials still gets 401; `0` closes the course."""
from __future__ import annotations

from academy.content import get_content
from tests.support.apps import WebSession, new_session
from tests.support.paths import EXERCISE, LESSON, SOLUTION


def test_a_visitor_reads_every_step_of_every_lesson(app, web) -> None:  # noqa: ANN001
    with app.app_context():
        lessons = get_content().course.lessons
    for lesson in lessons:
        assert web.client.get(f"/lessons/{lesson.id}").location == f"/lessons/{lesson.id}/{lesson.steps[0].id}"
        for step in lesson.steps:
            page = web.client.get(f"/lessons/{lesson.id}/{step.id}")
            assert page.status_code == 200, (lesson.id, step.id)
            text = page.get_data(as_text=True)
            assert f"<title>{step.title} · {lesson.title}" in text.replace("&#39;", "'")
            assert '<meta name="description" content="Lesson ' in text
        assert web.client.get(f"/lessons/{lesson.id}/end").status_code == 200
    exercise = web.client.get(f"/lessons/{LESSON}/amp-step").get_data(as_text=True)
    assert '"visitor": true' in exercise and "def train_step(" in exercise  # the prompt and the starter code
    assert "Start" in web.client.get("/").get_data(as_text=True)


def test_submit_makes_a_browser_session_a_guest(app, web) -> None:  # noqa: ANN001
    response = web.api("POST", "/api/submissions", json={"exercise": EXERCISE, "code": SOLUTION})
    assert response.status_code == 202, response.get_json()
    assert web.client.get("/auth/account").status_code == 200  # signed in, as a guest
    assert "Save progress: sign up" in web.client.get("/").get_data(as_text=True)
    # The page's CSRF token still works: the draft kept in the browser now goes to the server.
    assert web.api("PUT", f"/api/drafts/{EXERCISE}", json={"code": "x = 1"}).status_code == 204


def test_a_quiz_answer_makes_a_guest_and_is_kept(web) -> None:  # noqa: ANN001
    web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"})
    page = web.client.get(f"/lessons/{LESSON}/quiz").get_data(as_text=True)
    assert 'class="verdict' in page and "Save progress: sign up" in page


def test_no_guest_without_a_valid_csrf_token_or_for_drafts(app) -> None:  # noqa: ANN001
    bare = new_session(app)  # no page seen: no cookie session, no CSRF token
    assert bare.client.post("/api/submissions", json={"exercise": EXERCISE, "code": "x"}).status_code == 401
    forged = new_session(app)
    forged.csrf()
    response = forged.client.post("/api/runs", json={"exercise": EXERCISE, "code": "x"},
                                  headers={"X-CSRF-Token": "wrong"})
    assert response.status_code == 400 and forged.client.get("/auth/account").status_code == 302
    visitor = new_session(app)
    # Drafts need a learner but do not make one: a visitor's drafts stay in the browser.
    assert visitor.api("PUT", f"/api/drafts/{EXERCISE}", json={"code": "x"}).status_code == 401
    assert visitor.client.get("/auth/account").status_code == 302


def test_closed_course_needs_a_sign_in(make_app) -> None:  # noqa: ANN001
    web = WebSession(make_app(PUBLIC_LESSONS=False).test_client())
    response = web.client.get(f"/lessons/{LESSON}/the-catch-with-16-bit")
    assert response.status_code == 302 and "/auth/signin?next=" in response.location
    assert web.api("POST", "/api/submissions", json={"exercise": EXERCISE, "code": "x"}).status_code == 401
    assert web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"}).status_code == 302
    assert "Every lesson is open to read" not in web.client.get("/").get_data(as_text=True)


def test_account_links_name_whoever_asks(web, app) -> None:  # noqa: ANN001
    """GET /auth/account-links (lesson.js swaps them into the header when a Run or Submit makes a visitor a guest):
    a stranger's say Sign in, a guest's name the guest and offer Save progress; never cached."""

    stranger = web.client.get("/auth/account-links")
    assert stranger.status_code == 200 and "Sign in" in stranger.get_data(as_text=True)
    assert stranger.headers["Cache-Control"] == "no-store"
    guest = new_session(app).guest()
    page = guest.client.get("/auth/account-links").get_data(as_text=True)
    assert "guest #" in page and "Save progress" in page and "Sign in" not in page
