"""Two requests of one learner at the same moment, on SQLite and PostgreSQL: the first save of a draft in two
tabs, the first steps of a lesson opened in two tabs. The other request is made deterministic: it commits its
row from its own connection just before this request inserts the same row (a hook on the app's engine), as
the losing request of a real race finds it. Neither answers 500; neither loses what it stored."""
from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Callable

from flask import Flask
from sqlalchemy import delete, event, insert, select

from academy.data.db import get_session
from academy.data.models import ApiToken, Draft, LessonProgress, StepVisit, User, utcnow
from tests.support.apps import WebSession, new_session
from tests.support.paths import EXERCISE, LESSON

OWN_PAGE = {"Sec-Fetch-Site": "same-origin"}


def _just_before(app: Flask, table: str, other_request: Callable[[Any], None], verb: str = "INSERT") -> list[bool]:
    """Run `other_request(connection)` once, committed from another connection, just before this app's
    next INSERT INTO `table` (or UPDATE `table`)."""
    engine = app.extensions["academy.engine"]
    fired: list[bool] = []

    @event.listens_for(engine, "before_cursor_execute")
    def _before(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001
        target = f"INSERT INTO {table.upper()} " if verb == "INSERT" else f"UPDATE {table.upper()} SET"
        if not fired and statement.lstrip().upper().startswith(target):
            fired.append(True)
            with engine.connect() as other:
                other_request(other)
                other.commit()
    return fired


def _user_id(app: Flask, email: str) -> int:
    with app.app_context():
        return get_session().scalar(select(User.id).where(User.email == email))


def test_a_first_draft_saved_in_two_tabs_at_once(race_app) -> None:  # noqa: ANN001
    ada = new_session(race_app)
    ada.signup("ada@example.org")
    ada_id = _user_id(race_app, "ada@example.org")
    fired = _just_before(race_app, "drafts", lambda other: other.execute(insert(Draft).values(
        user_id=ada_id, exercise_id=EXERCISE, code="the other tab", size_bytes=13, address="127.0.0.1",
        updated_at=utcnow())))
    response = ada.api("PUT", f"/api/drafts/{EXERCISE}", {"code": "this tab"})
    assert fired and response.status_code == 204
    with race_app.app_context():
        assert get_session().scalar(select(Draft.code).where(Draft.user_id == ada_id)) == "this tab"


def test_a_lessons_first_steps_opened_in_two_tabs_at_once(race_app) -> None:  # noqa: ANN001
    ada: WebSession = new_session(race_app)
    ada.signup("ada@example.org")
    ada_id = _user_id(race_app, "ada@example.org")

    def other_tab(other: Any) -> None:
        other.execute(insert(LessonProgress).values(user_id=ada_id, lesson_id=LESSON, step_id="meet-autocast",
                                                    updated_at=utcnow()))
        other.execute(insert(StepVisit).values(user_id=ada_id, lesson_id=LESSON, step_id="meet-autocast"))
    fired = _just_before(race_app, "lesson_progress", other_tab)
    page = ada.client.get(f"/lessons/{LESSON}/the-catch-with-16-bit", headers=OWN_PAGE)
    assert fired and page.status_code == 200
    with race_app.app_context():
        db = get_session()
        assert set(db.scalars(select(StepVisit.step_id).where(StepVisit.user_id == ada_id))) == \
            {"meet-autocast", "the-catch-with-16-bit"}
        assert db.scalar(select(LessonProgress.step_id).where(LessonProgress.user_id == ada_id)) == \
            "the-catch-with-16-bit"


def _long_unseen(app: Flask, user_id: int) -> None:
    """The user's last request written more than an hour ago: its next one writes users.last_seen_at."""
    with app.app_context():
        db = get_session()
        db.get(User, user_id).last_seen_at = utcnow() - timedelta(hours=2)
        db.commit()


def test_a_guest_deleted_while_its_request_reads_it(race_app) -> None:  # noqa: ANN001
    """remove-idle-guests deletes a guest just as it comes back (between the request's read of its row and the
    write of its last request): the request goes on as a visitor's."""
    guest = new_session(race_app).guest()
    with race_app.app_context():
        guest_id = get_session().scalar(select(User.id).where(User.is_guest.is_(True)))
    _long_unseen(race_app, guest_id)
    fired = _just_before(race_app, "users", lambda other: other.execute(delete(User).where(User.id == guest_id)),
                         verb="UPDATE")
    answer = guest.client.get("/api/progress")
    assert fired and answer.status_code == 401
    assert guest.client.get("/").status_code == 200


def test_a_token_revoked_while_its_request_reads_it(race_app) -> None:  # noqa: ANN001
    ada = new_session(race_app)
    ada.signup("ada@example.org")
    page = ada.post("/auth/tokens", data={"name": "script"}).get_data(as_text=True)
    token = re.search(r"dla_[A-Za-z0-9_-]+", page).group(0)
    fired = _just_before(race_app, "api_tokens", lambda other: other.execute(delete(ApiToken)), verb="UPDATE")
    answer = race_app.test_client().get("/api/progress", headers={"Authorization": f"Bearer {token}"})
    assert fired and answer.status_code == 401 and "not valid" in answer.json["error"]
