"""The web app on a real PostgreSQL: migrations by init-db, a submission round trip, a restart."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from tests.support.apps import ready_app
from tests.support.databases import PostgresServer
from tests.support.paths import EXERCISE, SOLUTION


def _api(app, token: str):  # noqa: ANN001, ANN202
    client = app.test_client()
    headers = {"Authorization": f"Bearer {token}"}
    return lambda method, url, **kw: client.open(url, method=method, headers=headers, **kw)


def test_app_on_postgresql_migrates_grades_and_survives_a_restart(postgres: PostgresServer, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from academy import jobs
    from academy.data.db import get_session
    from academy.web.auth import create_account
    from academy.web.security import new_api_token

    monkeypatch.delenv("REDIS_URL", raising=False)  # grade in-process: this test is about the database
    config = {"INSTANCE_PATH": str(tmp_path / "instance"), "DATABASE_URL": postgres.url(), "SANDBOX": "local",
              "SECRET_KEY": "test", "TESTING": True}
    app = ready_app(config)  # `flask --app academy init-db` on a new database, then the app
    engine = create_engine(postgres.url())
    with engine.connect() as connection:
        assert connection.execute(text("select version_num from alembic_version")).scalar() is not None
        assert {"users", "submissions", "drafts"} <= set(inspect(connection).get_table_names())
    with app.app_context():
        token = new_api_token(create_account("pg@example.org", "password123"), "test")
        get_session().commit()

    api = _api(app, token)
    created = api("POST", "/api/submissions", json={"exercise": EXERCISE, "code": SOLUTION})
    assert created.status_code == 202, created.get_data(as_text=True)
    submission_id = created.get_json()["id"]
    deadline = time.monotonic() + 120
    while (state := api("GET", f"/api/submissions/{submission_id}").get_json())["status"] not in ("done", "error"):
        assert time.monotonic() < deadline, state
        time.sleep(0.2)
    assert state["status"] == "done" and state["result"]["passed"] is True
    jobs.shutdown(app)  # the in-process runner (no REDIS_URL here)

    # A restart: migrations are a no-op, the stored verdict and the token are still there.
    again = ready_app(config)
    state = _api(again, token)("GET", f"/api/submissions/{submission_id}").get_json()
    assert state["status"] == "done" and state["result"]["passed"] is True
    jobs.shutdown(again)
    engine.dispose()
    for each in (app, again):
        each.extensions["academy.engine"].dispose()  # let the server stop without waiting for clients
