"""Granting and revoking the instructor role of an existing account: `flask --app academy set-role` and the form
on an account's page under /instructor/learners/ID (issue 51). Each change signs the account out everywhere
(the acting browser stays in when it changes its own), is logged with control characters escaped, and never
takes the role from the last instructor."""
from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from typing import Iterator

import pytest
from flask import Flask
from sqlalchemy import event, select

from academy.data.accounts import create_account, new_api_token
from academy.data.db import get_session
from academy.data.models import User
from tests.support.apps import WebSession, new_session
from tests.support.databases import PostgresServer, postgres_bin


def account(app: Flask, email: str, role: str = "learner", confirmed: bool = True) -> int:
    with app.app_context():
        user = create_account(email, "password123", role=role, name=email.split("@")[0].title(),
                              confirmed=confirmed)
        get_session().commit()
        return user.id


def signed_in(app: Flask, email: str) -> WebSession:
    browser = new_session(app)
    assert browser.signin(email).status_code == 302
    return browser


def role_of(app: Flask, user_id: int) -> str:
    with app.app_context():
        return get_session().get(User, user_id).role


def set_role(app: Flask, *args: str):  # noqa: ANN201
    return app.test_cli_runner().invoke(args=["set-role", *args])


def flashes(page: str) -> list[str]:
    return re.findall(r'<p class="flash [a-z]+" role="status">([^<]*)</p>', page)


def role_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "academy.audit"]


# -- the command line

def test_set_role_grants_and_revokes_from_the_command_line(app: Flask, caplog: pytest.LogCaptureFixture) -> None:
    alice = account(app, "alice@example.org")
    account(app, "teacher@example.org", role="instructor")
    browser = signed_in(app, "alice@example.org")
    assert browser.client.get("/instructor/").status_code == 403
    with app.app_context():
        token = new_api_token(get_session().get(User, alice), "script")
        get_session().commit()
    bearer = {"Authorization": f"Bearer {token}"}
    assert app.test_client().get("/api/progress", headers=bearer).status_code == 200

    done = set_role(app, "Alice@Example.org", "instructor")
    assert done.exit_code == 0, done.output
    assert "Alice (id %d) is now an instructor." % alice in done.output
    assert "signed out" in done.output
    assert role_of(app, alice) == "instructor"
    # The cookie from before the change is signed out (no copy of it gains the role); a sign-in has it.
    assert browser.client.get("/instructor/").status_code == 302
    assert app.test_client().get("/api/progress", headers=bearer).status_code == 401  # nor does a token of before
    browser.signin("alice@example.org")
    assert browser.client.get("/instructor/").status_code == 200
    [line] = role_lines(caplog)
    assert line.endswith("the account's sessions were ended and its 1 API token(s) revoked")
    assert "on the command line granted the instructor role to account #%d <alice@example.org>" % alice in line
    assert re.search(r"role change at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line)

    done = set_role(app, "alice@example.org", "learner")
    assert done.exit_code == 0, done.output
    assert "is no longer an instructor" in done.output
    assert role_of(app, alice) == "learner"
    assert browser.client.get("/instructor/").status_code == 302  # signed out at once
    browser.signin("alice@example.org")
    assert browser.client.get("/instructor/").status_code == 403
    assert "revoked the instructor role of account #%d" % alice in role_lines(caplog)[-1]


def test_set_role_says_what_is_wrong(app: Flask) -> None:
    teacher = account(app, "teacher@example.org", role="instructor")
    bob = account(app, "bob@example.org")
    # create-user for an existing account points at set-role (it used to say "Sign in instead").
    exists = app.test_cli_runner().invoke(args=["create-user", "Bob@example.org", "--instructor", "--password",
                                                "long enough"])
    assert exists.exit_code == 1 and f"already exists (id {bob})" in exists.output
    assert "set-role bob@example.org instructor" in exists.output
    assert role_of(app, bob) == "learner"
    with app.app_context():
        db = get_session()
        guest, lms = User(is_guest=True), User(name="From The LMS")  # an LTI launch's account has no email
        db.add_all([guest, lms])
        db.commit()
        guest_id, lms_id = guest.id, lms.id

    unknown = set_role(app, "nobody@example.org", "instructor")
    assert unknown.exit_code == 1 and "No account with email nobody@example.org" in unknown.output
    assert "--user-id" in unknown.output
    assert set_role(app, "--user-id", "9999", "instructor").output.endswith("There is no account with id 9999.\n")
    refused = set_role(app, "--user-id", str(guest_id), "instructor")
    assert refused.exit_code == 1 and "is a guest" in refused.output and "signs up first" in refused.output
    same = set_role(app, "bob@example.org", "learner")
    assert same.exit_code == 1 and "is not an instructor; nothing changed." in same.output
    same = set_role(app, "teacher@example.org", "instructor")
    assert same.exit_code == 1 and "is already an instructor; nothing changed." in same.output
    last = set_role(app, "teacher@example.org", "learner")
    assert last.exit_code == 1 and "is the only instructor" in last.output
    assert role_of(app, teacher) == "instructor"
    # Usage mistakes: exit status 2 and the usage line.
    assert set_role(app, "bob@example.org", "admin").exit_code == 2
    assert set_role(app, "bob@example.org").exit_code == 2
    both = set_role(app, "bob@example.org", "--user-id", str(lms_id), "instructor")
    assert both.exit_code == 2 and "Usage:" in both.output

    made = set_role(app, "--user-id", str(lms_id), "instructor")
    assert made.exit_code == 0 and "From The LMS (id %d) is now an instructor." % lms_id in made.output
    assert role_of(app, lms_id) == "instructor"
    assert role_of(app, guest_id) == "learner"


def test_the_log_line_cannot_be_forged(app: Flask, caplog: pytest.LogCaptureFixture) -> None:
    """An email or name from an older row or an LMS may hold a line break or a terminal escape: the log shows
    it escaped, on the one line."""
    with app.app_context():
        db = get_session()
        user = User(email="x@example.org\nrole change at 2026-01-01T00:00:00Z: forged", name="Eve\x1b[2J\u2028")
        db.add(user)
        db.commit()
        user_id = user.id
    assert set_role(app, "--user-id", str(user_id), "instructor").exit_code == 0
    [line] = role_lines(caplog)
    assert "\n" not in line and "\x1b" not in line and "\u2028" not in line
    assert "x@example.org\\nrole change at 2026-01-01T00:00:00Z: forged" in line
    assert "Eve\\x1b[2J\\u2028" in line


# -- the instructor pages

def test_the_learner_page_grants_and_revokes(app: Flask, caplog: pytest.LogCaptureFixture) -> None:
    teacher_id = account(app, "teacher@example.org", role="instructor")
    alice = account(app, "alice@example.org")
    teacher = signed_in(app, "teacher@example.org")
    learner = signed_in(app, "alice@example.org")
    assert learner.client.get("/instructor/").status_code == 403

    # An account that has not started is found by its email.
    missing = teacher.client.get("/instructor/learners/find?email=nobody@example.org")
    assert missing.location.endswith("/instructor/instructors")
    assert flashes(teacher.client.get(missing.location).get_data(as_text=True)) == [
        "No account has the email nobody@example.org."]
    found = teacher.client.get("/instructor/learners/find?email=ALICE@example.org")
    assert found.status_code == 302 and found.location.endswith(f"/instructor/learners/{alice}")
    page = teacher.client.get(f"/instructor/learners/{alice}").get_data(as_text=True)
    assert 'id="role-form"' in page and 'name="role" value="instructor"' in page
    assert 'name="confirm" value="yes" required' in page

    # Without the confirming box nothing changes, and the page says why.
    answer = teacher.post(f"/instructor/learners/{alice}/role", data={"role": "instructor"})
    assert answer.status_code == 303 and role_of(app, alice) == "learner"
    assert "the role did not change" in " ".join(flashes(teacher.client.get(answer.location).get_data(as_text=True)))
    assert learner.client.get("/instructor/").status_code == 403

    answer = teacher.post(f"/instructor/learners/{alice}/role", data={"role": "instructor", "confirm": "yes"})
    assert answer.status_code == 303 and role_of(app, alice) == "instructor"
    [said] = flashes(teacher.client.get(answer.location).get_data(as_text=True))
    assert said == ("Alice is now an instructor. Every session of theirs was signed out and their API tokens "
                    "revoked: the role holds from their next sign-in.")
    assert learner.client.get("/instructor/").status_code == 302  # the old cookie is signed out
    learner.signin("alice@example.org")
    assert learner.client.get("/instructor/").status_code == 200  # at the next sign-in, no restart
    assert f"instructor account #{teacher_id} <teacher@example.org>" in role_lines(caplog)[-1]
    listed = teacher.client.get("/instructor/instructors").get_data(as_text=True).split('id="instructors"')[1]
    assert f'href="/instructor/learners/{alice}">Alice</a>' in listed
    assert f'href="/instructor/learners/{teacher_id}">Teacher</a>' in listed

    # Another instructor's role is revoked at once: the next request of that instructor has no instructor page.
    answer = teacher.post(f"/instructor/learners/{alice}/role", data={"role": "learner", "confirm": "yes"})
    assert role_of(app, alice) == "learner"
    assert "Alice is no longer an instructor." in flashes(teacher.client.get(answer.location).get_data(as_text=True))[0]
    assert learner.client.get("/instructor/").status_code == 302
    learner.signin("alice@example.org")
    assert learner.client.get("/instructor/").status_code == 403
    assert f"revoked the instructor role of account #{alice}" in role_lines(caplog)[-1]


def test_the_last_instructor_keeps_the_role(app: Flask) -> None:
    teacher_id = account(app, "teacher@example.org", role="instructor")
    teacher = signed_in(app, "teacher@example.org")
    own = teacher.client.get(f"/instructor/learners/{teacher_id}").get_data(as_text=True)
    assert 'id="last-instructor"' in own and "only instructor account" in own and 'id="role-form"' not in own
    assert 'id="profile"' not in own  # a learner's name and SIS id: instructor.learner_profile refuses instructors
    answer = teacher.post(f"/instructor/learners/{teacher_id}/role", data={"role": "learner", "confirm": "yes"})
    assert answer.status_code == 303 and role_of(app, teacher_id) == "instructor"
    [said] = flashes(teacher.client.get(answer.location).get_data(as_text=True))
    assert "is the only instructor, so the role stays" in said

    # With a second instructor, one's own role may go: this browser stays signed in, without the instructor
    # pages from its very next request; the other sessions of the account end.
    second = account(app, "second@example.org", role="instructor")
    elsewhere = signed_in(app, "teacher@example.org")
    own = teacher.client.get(f"/instructor/learners/{teacher_id}").get_data(as_text=True)
    assert 'id="last-instructor"' not in own and "Yes, revoke my own instructor role" in own
    answer = teacher.post(f"/instructor/learners/{teacher_id}/role", data={"role": "learner", "confirm": "yes"})
    assert answer.status_code == 303 and role_of(app, teacher_id) == "learner"
    assert answer.location.endswith("/")
    assert "You are no longer an instructor." in flashes(teacher.client.get(answer.location).get_data(as_text=True))[0]
    assert teacher.client.get("/instructor/").status_code == 403
    assert elsewhere.client.get("/instructor/").status_code == 302
    # The second one is the last now.
    other = signed_in(app, "second@example.org")
    assert 'id="last-instructor"' in other.client.get(f"/instructor/learners/{second}").get_data(as_text=True)


def test_the_role_form_needs_its_csrf_token_and_an_instructor(app: Flask) -> None:
    account(app, "teacher@example.org", role="instructor")
    alice = account(app, "alice@example.org")
    teacher = signed_in(app, "teacher@example.org")
    forged = teacher.client.post(f"/instructor/learners/{alice}/role", data={"role": "instructor", "confirm": "yes"})
    assert forged.status_code == 400 and role_of(app, alice) == "learner"
    wrong = teacher.client.post(f"/instructor/learners/{alice}/role",
                                data={"role": "instructor", "confirm": "yes", "csrf_token": "x" * 43})
    assert wrong.status_code == 400 and role_of(app, alice) == "learner"
    learner = signed_in(app, "alice@example.org")
    assert learner.post(f"/instructor/learners/{alice}/role",
                        data={"role": "instructor", "confirm": "yes"}).status_code == 403
    assert role_of(app, alice) == "learner"
    granted = {"role": "instructor", "confirm": "yes"}
    assert teacher.post("/instructor/learners/9999/role", data=granted).status_code == 404
    assert teacher.post(f"/instructor/learners/{alice}/role", data={**granted, "role": "admin"}).status_code == 400
    with app.app_context():
        instructors = get_session().scalars(select(User.email).where(User.role == "instructor")).all()
    assert instructors == ["teacher@example.org"]


def test_a_guest_has_no_role_form(app: Flask) -> None:
    account(app, "teacher@example.org", role="instructor")
    teacher = signed_in(app, "teacher@example.org")
    with app.app_context():
        db = get_session()
        guest = User(is_guest=True)
        db.add(guest)
        db.commit()
        guest_id = guest.id
    assert 'id="role-form"' not in teacher.client.get(f"/instructor/learners/{guest_id}").get_data(as_text=True)
    answer = teacher.post(f"/instructor/learners/{guest_id}/role", data={"role": "instructor", "confirm": "yes"})
    assert answer.status_code == 303 and role_of(app, guest_id) == "learner"
    assert "is a guest" in flashes(teacher.client.get(answer.location).get_data(as_text=True))[0]



def test_an_unconfirmed_address_names_no_one_until_an_operator_confirms_it(app: Flask,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    """Anyone can sign up with any address: granting by an unconfirmed one could make whoever signed up first with
    a colleague's address an instructor. The command says so; `confirm-email` vouches for it, or --user-id names
    the account itself; the page warns beside the form."""
    account(app, "teacher@example.org", role="instructor")
    prof = account(app, "prof@example.org", confirmed=False)
    refused = set_role(app, "prof@example.org", "instructor")
    assert refused.exit_code == 1 and "The address prof@example.org is not confirmed" in refused.output
    assert f"confirm-email prof@example.org (or name the account by --user-id {prof})" in refused.output
    assert role_of(app, prof) == "learner"
    teacher = signed_in(app, "teacher@example.org")
    page = teacher.client.get(f"/instructor/learners/{prof}").get_data(as_text=True)
    assert 'id="unconfirmed-email"' in page and 'id="role-form"' in page

    unknown = app.test_cli_runner().invoke(args=["confirm-email", "nobody@example.org"])
    assert unknown.exit_code == 1 and "No account with email nobody@example.org" in unknown.output
    done = app.test_cli_runner().invoke(args=["confirm-email", "Prof@Example.org"])
    assert done.exit_code == 0 and done.output == f"The address prof@example.org is confirmed for Prof (id {prof}).\n"
    with app.app_context():
        assert get_session().get(User, prof).email_confirmed
    assert "confirmed the address of account #%d <prof@example.org>" % prof in role_lines(caplog)[-1]
    again = app.test_cli_runner().invoke(args=["confirm-email", "prof@example.org"])
    assert again.exit_code == 1 and "was confirmed already" in again.output and "nothing changed" in again.output
    assert 'id="unconfirmed-email"' not in teacher.client.get(f"/instructor/learners/{prof}").get_data(as_text=True)

    assert set_role(app, "prof@example.org", "instructor").exit_code == 0
    assert role_of(app, prof) == "instructor"


# -- two revocations at once: one of them is refused (a 4xx on the page), never both done, never a 500

@pytest.fixture(params=["sqlite", "postgresql"])
def any_database(request: pytest.FixtureRequest, make_app) -> Iterator[Flask]:  # noqa: ANN001
    if request.param == "sqlite":
        yield make_app()
        return
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    server = PostgresServer().start()
    try:
        app = make_app(DATABASE_URL=server.url())
        yield app
        with app.app_context():
            get_session().get_bind().dispose()  # no connection left open: the server's shutdown waits for none
    finally:
        server.stop()


@contextmanager
def instructors_locked(app: Flask) -> Iterator[None]:
    """Another transaction holds what a revocation must wait for (the instructors' rows on PostgreSQL, SQLite's
    one write lock) until the block ends."""
    with app.app_context():
        engine = get_session().get_bind()
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            connection.begin()
            connection.execute(select(User.id).where(User.role == "instructor").with_for_update())
        yield
        connection.rollback()


def test_two_instructors_revoking_each_other_at_once_leave_one(any_database: Flask) -> None:
    """Both revocations pass every check before either writes (each waits behind a held lock, then both go):
    one is done, the other refused as the last instructor's."""
    from academy.data.accounts import AccountError
    from academy.data.roles import change_role

    app = any_database
    first, second = account(app, "first@example.org", "instructor"), account(app, "second@example.org", "instructor")
    with app.app_context():
        engine = get_session().get_bind()
    waiting: set[int] = set()
    both_waiting = threading.Event()
    holder = threading.get_ident()  # this thread holds the lock (instructors_locked): its statements are not counted

    @event.listens_for(engine, "before_cursor_execute")
    def _about_to_write(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        # The first statement a revocation sends after its checks: the lock (PostgreSQL) or the UPDATE (SQLite).
        ident = threading.get_ident()
        if ident != holder and ("FOR UPDATE" in statement or statement.startswith("UPDATE users SET role")):
            waiting.add(ident)
            if len(waiting) == 2:
                both_waiting.set()

    outcomes: dict[int, str] = {}

    def revoke(user_id: int) -> None:
        with app.app_context():
            user = get_session().get(User, user_id)
            try:
                change_role(user, "learner", by="a test")
                outcomes[user_id] = "revoked"
            except AccountError as exc:
                outcomes[user_id] = str(exc)

    try:
        with instructors_locked(app):
            threads = [threading.Thread(target=revoke, args=(uid,)) for uid in (first, second)]
            for thread in threads:
                thread.start()
            assert both_waiting.wait(30), waiting
        for thread in threads:
            thread.join(30)
    finally:
        event.remove(engine, "before_cursor_execute", _about_to_write)
    done, refused = sorted(outcomes.values(), key=lambda outcome: outcome != "revoked")
    assert done == "revoked" and "is the only instructor, so the role stays" in refused, outcomes
    assert sorted([role_of(app, first), role_of(app, second)]) == ["instructor", "learner"]
