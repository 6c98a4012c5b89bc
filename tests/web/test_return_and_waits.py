"""Learner frictions (issue 30): signing in, up and out brings the learner back where they were (`next`, never
off the site); an account's sign-out asks first; the lesson end names the steps still open and offers a guest
to save; every 429 says when to come back (Retry-After, and `retry_after` in the API's body)."""
from __future__ import annotations

import html
import re
from urllib.parse import quote

from flask import Flask

from academy.data.db import get_session
from academy.data.models import JobStatus, Submission, SubmissionKind, User
from academy.redirects import safe_next
from grader.core.course import load_course
from tests.support.apps import WebSession, new_session
from tests.support.paths import EXERCISE, LESSON

STEP = f"/lessons/{LESSON}/amp-step"
# What a browser would follow to another site (or run as script), as sent in a `next`: each lands on the course.
OFF_SITE = ["//evil.example", "https://evil.example", "/\\evil.example", "javascript:alert(1)",
            "%2F%2Fevil.example", "/%2F%2Fevil.example", "/%2F/evil.example", "/%5Cevil.example",
            "%252F%252Fevil.example", "/%252F%252Fevil.example", " //evil.example", "\t//evil.example",
            "\n/evil.example", "/%09/evil.example", "\u3000//evil.example", "JaVaScRiPt:alert(1)"]


def _href(page: str, pattern: str) -> str:
    """The (unescaped) href of the first link whose href matches `pattern`."""
    found = re.search(r'href="(%s)"' % pattern, page)
    assert found, pattern
    return html.unescape(found.group(1))


def _hidden_next(page: str) -> str:
    """The `next` of the page's sign-in or sign-up form (the header's language form carries the page itself)."""
    forms = [form for form in re.findall(r"<form.*?</form>", page, re.S) if 'name="password"' in form]
    assert len(forms) == 1, "not one sign-in or sign-up form"
    found = re.search(r'name="next" value="([^"]*)"', forms[0])
    assert found, "the form carries no next"
    return html.unescape(found.group(1))


def test_safe_next_refuses_every_way_off_the_site() -> None:
    for target in OFF_SITE:
        assert safe_next(target, "/") == "/", target
    for target in (STEP, f"/it{STEP}", f"{STEP}?x=1&y=%2F", "/lessons/a%20b", "/"):
        assert safe_next(target, "/") == target


def test_signing_up_or_in_from_a_step_comes_back_to_it(web: WebSession) -> None:
    course = web.client.get("/").get_data(as_text=True)
    assert 'href="/auth/signin"' in course and 'href="/auth/signup"' in course  # the course page: the default
    for prefix in ("", "/it"):  # the page's language is part of where the learner was
        page = web.client.get(f"{prefix}{STEP}").get_data(as_text=True)
        signup = _href(page, f"{prefix}/auth/signup\\?next=[^\"]+")
        assert signup == f"{prefix}/auth/signup?next={prefix}{STEP}"
        form = web.client.get(signup).get_data(as_text=True)
        assert _hidden_next(form) == prefix + STEP
        signin = _href(form, f"{prefix}/auth/signin\\?next=[^\"]+")  # "Already have one? Sign in" keeps it
        assert _hidden_next(web.client.get(signin).get_data(as_text=True)) == prefix + STEP
    done = web.post("/auth/signup", data={"email": "ada@example.org", "password": "password123", "name": "Ada",
                                          "next": _hidden_next(form)})
    assert done.status_code == 302 and done.location == f"/it{STEP}"
    web.post("/auth/signout")
    page = web.client.get(STEP).get_data(as_text=True)
    signin = _href(page, "/auth/signin\\?next=[^\"]+")
    back = web.post(signin, data={"email": "ada@example.org", "password": "password123"})
    assert back.status_code == 302 and back.location == STEP


def test_a_guest_saving_progress_comes_back_to_the_step(web: WebSession) -> None:
    web.guest()
    page = web.client.get(STEP).get_data(as_text=True)
    save = _href(page, "/auth/signup\\?next=[^\"]+")
    assert save == f"/auth/signup?next={STEP}"
    # The links lesson.js swaps in after a visitor's first Run or Submit carry the same destination.
    refresh = html.unescape(re.search(r'data-refresh="([^"]+)"', page).group(1))
    assert refresh == f"/auth/account-links?next={STEP}"
    assert _href(web.client.get(refresh).get_data(as_text=True), "/auth/signup\\?next=[^\"]+") == save
    reply = web.post(save, data={"email": "grace@example.org", "password": "password123", "name": "Grace"})
    assert reply.status_code == 302 and reply.location == STEP


def test_next_off_the_site_lands_on_the_course_page(web: WebSession) -> None:
    web.signup("ada@example.org")
    web.post("/auth/signout")
    for n, target in enumerate(OFF_SITE):
        asked = f"?next={quote(target, safe='')}"
        for form in ("/auth/signin", "/auth/signup"):
            page = web.client.get(form + asked).get_data(as_text=True)
            carried = _hidden_next(page) + " ".join(re.findall(r'href="([^"]*next=[^"]*)"', page))
            assert "evil" not in carried and "alert" not in carried, (form, target, carried)  # not carried on
        signed_in = web.post("/auth/signin" + asked, data={"email": "ada@example.org", "password": "password123"})
        assert signed_in.status_code == 302 and signed_in.location == "/", (target, signed_in.location)
        signout = web.client.get("/auth/signout" + asked).get_data(as_text=True)
        assert re.search(r'id="signout-cancel" href="/"', signout), (target, "Cancel leads off the site")
        web.post("/auth/signout")
        by_form = web.post("/auth/signin", data={"email": "ada@example.org", "password": "password123",
                                                 "next": target})
        assert by_form.location == "/", (target, by_form.location)
        web.post("/auth/signout")
        if n < 4:  # sign-ups (each a new account, and its password hashed) for the plainest few
            signed_up = web.post("/auth/signup" + asked, data={"email": f"n{n}@example.org",
                                                               "password": "password123", "name": f"N {n}"})
            assert signed_up.status_code == 302 and signed_up.location == "/", (target, signed_up.location)
            web.post("/auth/signout")


def _signed_in(web: WebSession) -> bool:
    return "Ada Lovelace" in web.client.get("/").get_data(as_text=True)


def test_an_account_signs_out_through_a_page_it_can_cancel(web: WebSession) -> None:
    web.signup("ada@example.org", name="Ada Lovelace")
    page = web.client.get(STEP).get_data(as_text=True)
    header = page.split('id="account"', 1)[1].split("</nav>", 1)[0]
    assert 'action="/auth/signout"' not in header  # the header's Sign out no longer signs out at once
    confirm = web.client.get(_href(header, "/auth/signout[^\"]*"))
    text = confirm.get_data(as_text=True)
    assert confirm.status_code == 200 and _signed_in(web)  # asking signs nobody out
    assert "This ends your session in every browser of this account" in text
    assert re.search(r'<form method="post" action="/auth/signout"[^>]*>\s*<input type="hidden" name="csrf_token"',
                     text)
    assert re.search(r'id="signout-cancel" href="([^"]*)"', text).group(1) == STEP  # Cancel: back to the step
    assert web.client.post("/auth/signout").status_code == 400 and _signed_in(web)  # no CSRF token: refused
    off_site = web.client.get("/auth/signout?next=%2F%2Fevil.example").get_data(as_text=True)
    assert 'id="signout-cancel" href="/"' in off_site  # the page's own address (the language form) keeps its query
    web.post("/auth/signout")
    assert not _signed_in(web)


def _open_steps(page: str) -> list[tuple[str, str]]:
    listed = page.split('<ol class="still-open">', 1)[1].split("</ol>", 1)[0]
    found = re.findall(r'<a href="(?:/[a-z]{2})?/lessons/%s/([^"]+)">(.*?)</a>' % LESSON, listed)
    return [(step_id, html.unescape(title)) for step_id, title in found]


def test_the_lesson_end_names_the_open_steps_and_offers_a_guest_to_save(app: Flask) -> None:
    lesson = next(lesson for lesson in load_course().lessons if lesson.id == LESSON)
    read = [step.id for step in lesson.steps[:2]]
    web = new_session(app).guest()
    for step_id in read:
        web.client.get(f"/lessons/{LESSON}/{step_id}")
    end = f"/lessons/{LESSON}/end"
    page = web.client.get(end).get_data(as_text=True)
    assert _open_steps(page) == [(s.id, s.title) for s in lesson.steps if s.id not in read]
    save = _href(page.split('id="save-progress"', 1)[1], "/auth/signup\\?next=[^\"]+")
    assert save == f"/auth/signup?next={end}"
    saved = web.post(save, data={"email": "grace@example.org", "password": "password123", "name": "Grace"})
    assert saved.location == end
    after = web.client.get(end).get_data(as_text=True)
    assert "2 of" in after and 'id="save-progress"' not in after  # the account kept the guest's steps
    visitor = new_session(app).client.get(f"/it{end}").get_data(as_text=True)
    assert 'id="save-progress"' in visitor and len(_open_steps(visitor)) == len(lesson.steps)


def _wait_of(response) -> int:  # noqa: ANN001
    """The Retry-After of a 429, checked to be whole seconds a client can wait."""
    assert response.status_code == 429, response.status_code
    value = response.headers.get("Retry-After", "")
    assert value.isdigit() and int(value) >= 1, value
    return int(value)


def test_every_429_says_when_to_come_back(make_app) -> None:  # noqa: ANN001
    app = make_app(LIMIT_RUNS_PER_ACCOUNT="1 per minute", SUBMISSION_RATE=(1, 30),
                   LIMIT_QUIZ_ANSWERS_PER_ACCOUNT="1 per minute", LIMIT_GUESTS_PER_ADDRESS="2 per 10 minutes")
    web = new_session(app).guest()
    # A limit Flask-Limiter counts: the header and the body's retry_after agree, within the limit's window.
    for url, window in (("/api/runs", 60), ("/api/submissions", 30)):
        assert web.api("POST", url, {"exercise": "no/such", "code": "x"}).status_code == 404
        refused = web.api("POST", url, {"exercise": "no/such", "code": "x"})
        wait = _wait_of(refused)
        assert wait <= window and refused.get_json()["retry_after"] == wait, (url, refused.get_json())
        assert isinstance(refused.get_json()["retry_after"], int)
    # One job still waiting: the view's own 429 keeps its wait (Flask-Limiter's header hook would put the
    # submission limit's reset there).
    other = new_session(app).guest()
    user_id = int(other.api("GET", "/api/progress").get_json()["user"].split("#")[1])
    with app.app_context():
        db = get_session()
        db.add(Submission(user_id=user_id, exercise_id=EXERCISE, code="x", status=JobStatus.QUEUED,
                          fair_key=f"user-{user_id}", kind=SubmissionKind.GRADE))
        db.commit()
    pending = other.api("POST", "/api/submissions", {"exercise": EXERCISE, "code": "x = 1"})
    assert _wait_of(pending) == 5 and pending.get_json()["retry_after"] == 5
    assert "still being graded" in pending.get_json()["error"]
    # Pages: a quiz answer above its limit, a guest above its address's budget (spend()), in the page's words.
    web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"})
    quiz = web.post(f"/it/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"})
    assert f"Riprova tra {_wait_of(quiz)} s." in quiz.get_data(as_text=True)
    guest = new_session(app).post("/auth/guest")
    assert f"Try again in {_wait_of(guest)} s." in guest.get_data(as_text=True)
    with app.app_context():
        assert get_session().query(User).count() == 2
