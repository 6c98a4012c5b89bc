"""Accounts: sign up and in, guests who become accounts without losing progress, API tokens, CSRF."""
from __future__ import annotations

import re

from sqlalchemy import select

from academy.data.db import get_session
from academy.data.models import LessonProgress, QuizAnswer, User
from tests.support.apps import new_session
from tests.support.paths import LESSON


def test_signup_signin_signout(web, app) -> None:  # noqa: ANN001
    assert web.signup("Ada@Example.org", name="Ada Lovelace").status_code == 302
    assert "Ada Lovelace" in web.client.get("/").get_data(as_text=True)  # the header names the account
    web.post("/auth/signout")
    assert "Sign in" in web.client.get("/").get_data(as_text=True)
    wrong = web.signin("ada@example.org", "wrong-password")
    assert wrong.status_code == 401 and "Wrong email or password" in wrong.get_data(as_text=True)
    assert web.signin("ADA@example.org").status_code == 302
    with app.app_context():
        user = get_session().scalar(select(User))
        assert user.password_hash.startswith("scrypt:") and "password123" not in user.password_hash


def test_signup_errors_are_plain_and_keep_the_email(web) -> None:  # noqa: ANN001
    web.signup("ada@example.org")
    other = new_session(web.client.application)
    # Unconfirmed, the address is not refused to whoever owns it: the sign-up waits for its mailed link
    # (tests/web/test_email_confirmation.py); confirmed, it is refused.
    waiting = other.signup("ada@example.org")
    assert waiting.status_code == 202 and "written to the server's log" in waiting.get_data(as_text=True)
    with web.client.application.app_context():
        from academy.web.confirmation import confirm_by_operator

        confirm_by_operator("ada@example.org")
        get_session().commit()
    taken = other.signup("ada@example.org")
    assert taken.status_code == 400 and "already exists" in taken.get_data(as_text=True)
    short = other.signup("bob@example.org", "short")
    assert short.status_code == 400 and "at least 8 characters" in short.get_data(as_text=True)
    assert 'value="bob@example.org"' in short.get_data(as_text=True)
    bad = other.signup("not-an-email")
    assert "valid email" in bad.get_data(as_text=True)


def test_guest_becomes_an_account_and_keeps_progress(web, app) -> None:  # noqa: ANN001
    web.guest()
    web.client.get(f"/lessons/{LESSON}/what-autocast-wraps")
    web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"})
    with app.app_context():
        guest_id = get_session().scalar(select(User.id).where(User.is_guest.is_(True)))
    assert web.signup("grace@example.org").status_code == 302
    with app.app_context():
        db = get_session()
        user = db.get(User, guest_id)
        assert user.email == "grace@example.org" and not user.is_guest
        assert db.scalar(select(LessonProgress.step_id).where(LessonProgress.user_id == guest_id)) == \
            "what-autocast-wraps"
        assert db.scalar(select(QuizAnswer.correct).where(QuizAnswer.user_id == guest_id)) is True
        assert db.scalar(select(User.id).where(User.is_guest.is_(True))) is None
    # Signing in again later reaches the same progress.
    web.post("/auth/signout")
    web.signin("grace@example.org")
    assert web.client.get(f"/lessons/{LESSON}").location.endswith(f"/lessons/{LESSON}/what-autocast-wraps")


def test_forms_without_csrf_token_are_refused(web, app) -> None:  # noqa: ANN001
    client = web.client
    client.get("/")
    refused = client.post("/auth/signup", data={"email": "eve@example.org", "password": "password123"})
    assert refused.status_code == 400 and "CSRF" in refused.get_data(as_text=True)
    wrong = client.post("/auth/guest", data={"csrf_token": "forged"})
    assert wrong.status_code == 400
    with app.app_context():
        assert get_session().scalar(select(User)) is None


def test_api_tokens_on_the_account_page(web) -> None:  # noqa: ANN001
    web.signup("ada@example.org")
    page = web.post("/auth/tokens", data={"name": "laptop"}).get_data(as_text=True)
    token = re.search(r"<code>(dla_[^<]+)</code>", page).group(1)
    anonymous = web.client.application.test_client()
    bearer = {"Authorization": f"Bearer {token}"}
    assert anonymous.get("/api/progress", headers=bearer).json["user"] == "ada@example.org"
    listed = web.client.get("/auth/account").get_data(as_text=True)
    assert "laptop" in listed and token not in listed  # shown once, never again
    token_id = re.search(r"/auth/tokens/(\d+)/revoke", listed).group(1)
    web.post(f"/auth/tokens/{token_id}/revoke")
    revoked = anonymous.get("/api/progress", headers=bearer)
    assert revoked.status_code == 401 and "not valid" in revoked.json["error"]


def test_guests_cannot_create_tokens(web) -> None:  # noqa: ANN001
    web.guest()
    assert web.post("/auth/tokens", data={"name": "x"}).status_code == 403


def test_next_parameter_only_redirects_within_the_site(web) -> None:  # noqa: ANN001
    web.signup("ada@example.org")
    web.post("/auth/signout")
    response = web.post("/auth/signin", data={"email": "ada@example.org", "password": "password123",
                                                  "next": "//evil.example/"})
    assert response.location == "/"
    response = web.post("/auth/signin", data={"email": "ada@example.org", "password": "password123",
                                                  "next": f"/lessons/{LESSON}/3"})
    assert response.location == f"/lessons/{LESSON}/3"


def test_sign_up_asks_for_a_name_and_refuses_what_no_gradebook_cell_can_hold(web, app) -> None:  # noqa: ANN001
    missing = web.signup("nameless@example.org", name="   ")
    assert missing.status_code == 400 and "Enter your name as your course knows it." in missing.get_data(as_text=True)
    assert 'value="nameless@example.org"' in missing.get_data(as_text=True)  # what was typed is kept
    broken = web.signup("broken@example.org", name="Eve\x1b[31m")
    assert broken.status_code == 400 and "control characters" in broken.get_data(as_text=True)
    long = web.signup("long@example.org", name="x" * 101)
    assert long.status_code == 400 and "at most 100 characters" in long.get_data(as_text=True)
    assert web.signup("grace@example.org", name=" Grace   Hopper ").status_code == 302
    with app.app_context():
        assert [(u.email, u.name) for u in get_session().scalars(select(User))] == [("grace@example.org",
                                                                                    "Grace Hopper")]
    account = web.client.get("/auth/account").get_data(as_text=True)
    assert 'value="Grace Hopper"' in account and "grace@example.org" in account
    assert web.post("/auth/name", data={"name": "Rear Admiral Hopper"}).status_code == 303
    assert web.post("/auth/name", data={"name": "\u202e"}).status_code == 303  # refused: nothing changes
    with app.app_context():
        assert get_session().scalar(select(User)).name == "Rear Admiral Hopper"


def test_an_instructor_lands_on_the_instructor_pages_and_a_learner_on_the_course(web, app) -> None:  # noqa: ANN001
    from academy.data.accounts import create_account

    with app.app_context():
        create_account("teacher@example.org", "password123", role="instructor", name="Teacher")
        create_account("pupil@example.org", "password123", name="Pupil")
        get_session().commit()
    assert web.signin("teacher@example.org").location == "/instructor/"
    web.post("/auth/signout")
    assert web.signin("pupil@example.org").location == "/"
    web.post("/auth/signout")
    # An explicit destination still wins (a link that asked for a sign-in).
    asked = web.post("/auth/signin", data={"email": "teacher@example.org", "password": "password123",
                                          "next": "/lessons/mixed-precision"})
    assert asked.location == "/lessons/mixed-precision"
