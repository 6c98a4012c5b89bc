"""Confirmed email addresses (issue 51): a sign-up mails a link through a real SMTP server (aiosmtpd), read
from the received mail and opened; an unconfirmed address is never an LMS's matching key and never keeps its
owner out. The attack: a classmate signs up first with the victim's address."""
from __future__ import annotations

import csv
import io
import logging
import time

import pytest
from sqlalchemy import select

from academy.data.db import get_session
from academy.data.models import LtiIdentity, LtiPlatform, QuizAnswer, User
from tests.support.apps import WebSession, new_session
from tests.support.mail import LINK, confirm_link, link_path
from tests.support.paths import LESSON
from tests.support.processes import free_port


def _signed_in_as(web: WebSession, email_address: str) -> bool:
    return email_address in web.client.get("/auth/account").get_data(as_text=True)


def _user(app, email_address: str) -> User | None:  # noqa: ANN001
    with app.app_context():
        return get_session().scalar(select(User).where(User.email == email_address))


def _gradebook(app, shape: str) -> list[list[str]]:  # noqa: ANN001
    from academy.data.accounts import create_account

    with app.app_context():
        if _user(app, "teacher@example.org") is None:
            create_account("teacher@example.org", "password123", role="instructor", name="Teacher")
            get_session().commit()
    teacher = new_session(app)
    teacher.signin("teacher@example.org")
    response = teacher.client.get(f"/instructor/gradebook.csv?format={shape}")
    assert response.status_code == 200
    return list(csv.reader(io.StringIO(response.get_data(as_text=True))))


def _answer_quiz(web: WebSession) -> None:
    assert web.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"}).status_code in (200, 302)


def test_sign_up_mails_a_link_that_confirms_the_address(mailing) -> None:  # noqa: ANN001
    app, box = mailing
    web = new_session(app)
    done = web.signup("ada@example.org", name="Ada")
    assert done.status_code == 302
    assert "We sent a link to ada@example.org" in web.client.get("/").get_data(as_text=True)
    _recipients, message = box.wait(1)[0]
    assert message["From"] == "Academy <academy@example.org>" and "Confirm" in message["Subject"]
    link = box.link(1, "ada@example.org")
    account = web.client.get("/auth/account").get_data(as_text=True)
    assert "not confirmed" in account and 'id="send-confirmation"' in account
    # Opening the link (what a mail scanner does too) confirms nothing; the form does.
    assert web.client.get(link_path(link)).status_code == 200
    assert _user(app, "ada@example.org").email_confirmed_at is None
    confirmed = confirm_link(web, link, password=None)  # signed in to that account: no password asked
    assert confirmed.status_code == 303
    assert _user(app, "ada@example.org").email_confirmed_at is not None
    account = web.client.get("/auth/account").get_data(as_text=True)
    assert "(confirmed)" in account and 'id="send-confirmation"' not in account
    assert web.client.get(link_path(link)).status_code == 410  # single use: the address is confirmed now
    assert web.client.get("/auth/confirm/" + link.rsplit("/", 1)[1][:-2] + "xx").status_code == 410  # tampered


def test_a_classmate_cannot_hold_a_victims_address(mailing) -> None:  # noqa: ANN001
    """The attack: a classmate signs up first with the victim's address and works under it."""
    app, box = mailing
    classmate = new_session(app)
    assert classmate.signup("victim@example.org", "classmate-pw", name="Victim").status_code == 302
    _answer_quiz(classmate)
    squatter_link = box.link(1, "victim@example.org")
    # The LMS files leave the unconfirmed address out (the classmate has no SIS id: no row at all) ...
    assert not any("victim@example.org" in row for row in _gradebook(app, "moodle") + _gradebook(app, "canvas"))
    plain = {row[2]: row for row in _gradebook(app, "plain")[1:]}
    assert plain["victim@example.org"][5] == "no"  # the plain file says it is unconfirmed
    # ... and the victim, who got the classmate's mail, cannot confirm it for the classmate without their password.
    victim = new_session(app)
    assert confirm_link(victim, squatter_link, "password123").status_code == 401
    assert _user(app, "victim@example.org").email_confirmed_at is None

    # Sign-ups for the address mail it a sign-up link, at most one per confirmation.RESEND_EVERY whoever signs
    # up; no sign-up is tied to a link, so none can make another's die.
    for _ in range(3):
        assert new_session(app).signup("victim@example.org", "classmate-pw", name="Classmate").status_code == 202
    first_link = box.link(2, "victim@example.org")
    assert len(box.messages) == 2
    # The victim signs up (as a guest with progress): not refused, told that a link reached the address moments
    # ago, nobody signed in, nothing of the sign-up kept.
    victim.guest()
    _answer_quiz(victim)
    with app.app_context():
        guest_id = get_session().scalar(select(User.id).where(User.is_guest.is_(True)))
    waiting = victim.signup("victim@example.org", "victim-password", name="Victim")
    assert waiting.status_code == 202 and "was sent to victim@example.org" in waiting.get_data(as_text=True)
    assert "already exists" not in waiting.get_data(as_text=True) and len(box.messages) == 2
    assert not _signed_in_as(victim, "victim@example.org")
    # The link in the mailbox (the classmate's sign-up asked for it) is the owner's: its opener chooses the password.
    phone = new_session(app)  # the victim opens the mail on another device
    form = phone.client.get(link_path(first_link)).get_data(as_text=True)
    assert "Choose a password" in form and "never confirmed this address holds it" in form  # a forgotten account?
    assert phone.post(link_path(first_link), data={"password": "short"}).status_code == 400  # too short: nothing made
    finished = phone.post(link_path(first_link), data={"password": "victim-password", "name": "Victim"})
    assert finished.status_code == 303
    assert "victim@example.org is confirmed" in phone.client.get("/auth/account").get_data(as_text=True)
    owner = _user(app, "victim@example.org")
    assert owner.email_confirmed_at is not None and not owner.is_guest and owner.name == "Victim"
    with app.app_context():
        db = get_session()
        squatter = db.scalar(select(User).where(User.name == "Victim", User.id != owner.id, User.is_guest.is_(False)))
        assert squatter.email is None and squatter.email_confirmed_at is None  # lost, never confirmed for them
        assert db.scalar(select(QuizAnswer.id).where(QuizAnswer.user_id == squatter.id)) is not None  # work kept
        assert db.scalar(select(QuizAnswer.id).where(QuizAnswer.user_id == owner.id)) is None  # nobody else's work
    assert victim.client.get(link_path(squatter_link)).status_code == 410  # the address left that account
    assert phone.post(link_path(first_link), data={"password": "another-password"}).status_code == 410  # used
    # The guest's work is the victim's browser's: signing in there offers to merge it.
    merge = victim.signin("victim@example.org", "victim-password")
    assert "/auth/merge" in merge.headers["Location"]
    assert victim.post("/auth/merge", data={"action": "merge"}).status_code == 302
    with app.app_context():
        assert get_session().scalar(select(QuizAnswer.user_id).where(QuizAnswer.user_id == guest_id)) is None
        assert get_session().scalar(select(QuizAnswer.id).where(QuizAnswer.user_id == owner.id)) is not None
    # The gradebooks put the owner's own grade under the address, not the classmate's.
    moodle = _gradebook(app, "moodle")
    assert [row[0] for row in moodle[1:]] == ["victim@example.org"]
    # A confirmed address is refused as before.
    again = new_session(app).signup("victim@example.org", "classmate-pw")
    assert again.status_code == 400 and "already exists" in again.get_data(as_text=True)


def test_links_expire_are_single_purpose_and_rate_limited(mailing, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    from itsdangerous import URLSafeTimedSerializer
    from itsdangerous.timed import TimestampSigner

    from academy.web import confirmation

    app, box = mailing
    web = new_session(app)
    web.signup("grace@example.org")
    box.wait(1)
    user_id = _user(app, "grace@example.org").id
    # A new link is rate-limited: the sign-up sent one a moment ago.
    again = web.post("/auth/confirm")
    assert again.status_code == 303
    assert "you can ask for another in" in web.client.get("/auth/account").get_data(as_text=True)
    assert len(box.messages) == 1
    with app.app_context():
        db = get_session()
        db.get(User, user_id).confirmation_sent_at = None  # as if minutes had passed
        db.commit()
    web.post("/auth/confirm")
    assert "We sent a link to grace@example.org" in web.client.get("/auth/account").get_data(as_text=True)
    fresh = box.link(2, "grace@example.org")
    # Expired: a link signed 49 hours ago (DLA_EMAIL_CONFIRM_HOURS is 48).
    monkeypatch.setattr(TimestampSigner, "get_timestamp", lambda _self: int(time.time()) - 49 * 3600)
    with app.test_request_context():
        old = confirmation.link({"u": user_id, "e": "grace@example.org"})
    monkeypatch.undo()
    expired = web.client.get(link_path(old))
    assert expired.status_code == 410 and "expired" in expired.get_data(as_text=True)
    # Single purpose: the same payload signed with the site's key under another salt is no link.
    with app.app_context():
        other = URLSafeTimedSerializer(app.secret_key, salt="another-purpose").dumps(
            {"u": user_id, "e": "grace@example.org"})
    assert web.client.get(f"/auth/confirm/{other}").status_code == 410
    # Dies when the address changes (an operator edits it), and comes back for nobody else.
    with app.app_context():
        db = get_session()
        db.get(User, user_id).email = "grace@new.example.org"
        db.commit()
    assert web.client.get(link_path(fresh)).status_code == 410


def test_without_an_smtp_host_the_link_is_in_the_log_and_a_failed_mail_is_said(make_app, caplog) -> None:  # noqa: ANN001
    app = make_app()
    web = new_session(app)
    with caplog.at_level(logging.WARNING, logger="academy.mail"):
        web.signup("ops@example.org")
    page = web.client.get("/").get_data(as_text=True)
    assert "This site sends no mail" in page and "written to the server" in page
    link = LINK.search(caplog.text).group(0)
    # Opened in another browser that is a guest with work: the password confirms, signs in, offers the merge.
    elsewhere = new_session(app).guest()
    _answer_quiz(elsewhere)
    confirmed = confirm_link(elsewhere, link)
    assert confirmed.status_code == 303 and "/auth/merge" in confirmed.location
    assert _user(app, "ops@example.org").email_confirmed_at is not None
    assert elsewhere.post("/auth/merge", data={"action": "merge"}).status_code == 302
    with app.app_context():
        assert get_session().scalar(select(QuizAnswer.user_id)) == _user(app, "ops@example.org").id

    closed = make_app(INSTANCE_PATH=str(app.instance_path) + "-2", SMTP_HOST="127.0.0.1", SMTP_PORT=free_port(),
                      SMTP_SECURITY="none")
    web = new_session(closed)
    assert web.signup("nomail@example.org").status_code == 302  # the account is made; the mail did not go
    assert "could not be sent" in web.client.get("/").get_data(as_text=True)
    for _ in range(2):  # a sign-up link that did not go counts for nothing: the next sign-up tries again
        again = new_session(closed).signup("nomail@example.org", "password456")
        assert again.status_code == 202 and "could not be sent" in again.get_data(as_text=True)


def test_operator_accounts_count_as_confirmed_and_lms_learners_export_the_lms_email(app) -> None:  # noqa: ANN001
    """`create-user` vouches for the address; an LTI learner's Moodle and Canvas rows carry the address the LMS
    asserted (stored on their identity), which the Moodle file left empty before."""
    result = app.test_cli_runner().invoke(args=["create-user", "made@example.org", "--password", "password123"])
    assert result.exit_code == 0, result.output
    assert _user(app, "made@example.org").email_confirmed_at is not None
    with app.app_context():
        db = get_session()
        platform = LtiPlatform(name="LMS", issuer="https://lms.example.org", client_id="c", auth_login_url="https://x",
                               auth_token_url="https://x", key_set_url="https://x", tool_private_key="pem",
                               tool_kid="k")
        lms_user = User(role="learner", name="Lin")
        db.add_all([platform, lms_user])
        db.flush()
        db.add(LtiIdentity(platform_id=platform.id, deployment_id="d", sub="s", user_id=lms_user.id,
                           email="lin@lms.example.org"))
        db.add(QuizAnswer(user_id=lms_user.id, lesson_id=LESSON, question_id="vanishing-gradients", option_id="1",
                          correct=True))
        db.commit()
    moodle = _gradebook(app, "moodle")
    assert [row[:3] for row in moodle[1:]] == [["lin@lms.example.org", "", "Lin"]]
    with app.app_context():  # an account from before migration 0011, until its operator vouches for it
        from academy.web.confirmation import confirm_all_by_operator

        db = get_session()
        db.add(User(email="legacy@example.org", name="Legacy", role="learner"))
        db.commit()
        assert confirm_all_by_operator() == 1
        db.commit()
    assert _user(app, "legacy@example.org").email_confirmed_at is not None
    canvas = _gradebook(app, "canvas")
    assert [row[:4] for row in canvas[2:]] == [["Lin", "", "", "lin@lms.example.org"]]


def test_mails_to_one_address_are_bounded_whoever_asks(mailing) -> None:  # noqa: ANN001
    """A squatter holding an address cannot make the site mail it without end: sign-up links to one address go
    at most once per RESEND_EVERY and SIGNUP_LINKS_PER_ADDRESS a day, whoever signs up; the account's own link
    ACCOUNT_LINKS_PER_DAY a day. A sign-up that mails nothing says a link went out, and that link works."""
    from datetime import timedelta

    from sqlalchemy import update

    from academy.data.models import SignupLinkMail
    from academy.web import confirmation

    app, box = mailing

    def earlier(delta: timedelta) -> None:  # as if that much time had passed since the mails so far
        with app.app_context():
            db = get_session()
            for row in db.scalars(select(SignupLinkMail)):
                row.sent_at -= delta
            db.commit()

    squatter = new_session(app)
    assert squatter.signup("target@example.org", "squatter-pw", name="Squatter").status_code == 302
    box.wait(1)
    answers = []
    for _ in range(confirmation.SIGNUP_LINKS_PER_ADDRESS + 1):
        for _ in range(2):  # the second within RESEND_EVERY: no mail
            answers.append(new_session(app).signup("target@example.org", "squatter-pw").get_data(as_text=True))
        earlier(confirmation.RESEND_EVERY)
    mailed = len(box.messages) - 1
    assert mailed == confirmation.SIGNUP_LINKS_PER_ADDRESS  # the last pair: the day's bound
    assert "We sent a link to target@example.org" in answers[0]
    assert all("was sent to target@example.org within the last 24 hours" in page for page in answers[1::2])
    assert "was sent to target@example.org" in answers[-2]
    earlier(timedelta(days=1))
    assert new_session(app).signup("target@example.org", "squatter-pw").status_code == 202
    assert len(box.wait(mailed + 2)) == mailed + 2  # a day later, one more
    # Each of them works for whoever reads the mailbox (none was replaced); the first one makes the account.
    links = [box.link(number, "target@example.org") for number in range(2, mailed + 3)]
    assert all(new_session(app).client.get(link_path(each)).status_code == 200 for each in links)
    owner = new_session(app)
    assert owner.post(link_path(links[0]), data={"password": "owner-password"}).status_code == 303
    assert all(new_session(app).client.get(link_path(each)).status_code == 410 for each in links)

    # The account's own link ("send a new link"): at most ACCOUNT_LINKS_PER_DAY a day, the sign-up's included.
    before = len(box.messages)
    web = new_session(app)
    web.signup("held@example.org", "password123")
    for _ in range(confirmation.ACCOUNT_LINKS_PER_DAY + 2):
        with app.app_context():
            db = get_session()
            db.execute(update(User).values(confirmation_sent_at=None))  # as if minutes had passed
            db.commit()
        assert web.post("/auth/confirm").status_code == 303
    assert len(box.messages) - before == confirmation.ACCOUNT_LINKS_PER_DAY
    assert "No new link was sent" in web.client.get("/auth/account").get_data(as_text=True)


def test_a_sign_up_link_keeps_only_its_openers_guest_work(mailing) -> None:  # noqa: ANN001
    """The squatter signs up for the held address as a guest with work: none of it reaches the account, which
    is the guest that opens the link (the owner's browser), with the owner's work and the password they chose."""
    app, box = mailing
    squatter = new_session(app)
    assert squatter.signup("owner@example.org", "squatter-pw", name="Squatter").status_code == 302
    assert squatter.post("/auth/signout").status_code == 302
    squatter.guest()
    _answer_quiz(squatter)
    assert squatter.signup("owner@example.org", "squatter-pw", name="Owner").status_code == 202
    link = box.link(2, "owner@example.org")
    owner = new_session(app).guest()
    _answer_quiz(owner)
    with app.app_context():
        guests = get_session().scalars(select(User.id).where(User.is_guest.is_(True)).order_by(User.id)).all()
    assert len(guests) == 2
    done = owner.post(link_path(link), data={"password": "owner-password"})
    assert done.status_code == 303 and "/auth/merge" not in done.location  # the guest itself became the account
    account = _user(app, "owner@example.org")
    assert account.id == guests[1] and account.name is None and account.email_confirmed_at is not None
    with app.app_context():
        db = get_session()
        assert db.get(User, guests[0]).is_guest  # the squatter's guest stays theirs
        assert db.scalar(select(QuizAnswer.id).where(QuizAnswer.user_id == guests[0])) is not None
    assert new_session(app).signin("owner@example.org", "squatter-pw").status_code == 401
    assert new_session(app).signin("owner@example.org", "owner-password").status_code == 302
