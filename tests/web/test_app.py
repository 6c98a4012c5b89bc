"""The app factory, the database and its migrations, and the administrator commands."""
from __future__ import annotations

import os
import subprocess
import sys

from sqlalchemy import inspect, select

from academy import create_app, jobs
from academy.db import get_session
from academy.models import User
from tests.helpers import REPO


def test_database_is_sqlite_in_the_instance_folder_and_migrated(app) -> None:  # noqa: ANN001
    engine = app.extensions["academy.engine"]
    assert engine.url.database == os.path.join(app.instance_path, "academy.sqlite")
    tables = set(inspect(engine).get_table_names())
    assert {"users", "submissions", "drafts", "lesson_progress", "quiz_answers", "api_tokens",
            "validation_runs", "alembic_version"} <= tables


def test_database_url_selects_another_database(make_app, tmp_path) -> None:  # noqa: ANN001
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    app = make_app(DATABASE_URL=url)
    assert (tmp_path / "elsewhere.db").exists()
    assert str(app.extensions["academy.engine"].url) == url


def test_starting_twice_keeps_the_data(make_app) -> None:  # noqa: ANN001
    first = make_app()
    with first.app_context():
        get_session().add(User(email="kept@example.org", role="learner"))
        get_session().commit()
    second = make_app()  # runs the migrations again: a no-op at head
    with second.app_context():
        assert get_session().scalar(select(User.email)) == "kept@example.org"


def test_cli_init_db_create_user_and_token(tmp_path) -> None:  # noqa: ANN001
    env = {**os.environ, "DLA_INSTANCE": str(tmp_path / "inst"), "DLA_SANDBOX": "local"}
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_EXERCISES", "SECRET_KEY"):
        env.pop(name, None)

    def flask(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "flask", "--app", "academy", *args], env=env, cwd=REPO,
                              capture_output=True, text=True, input=input, timeout=120)

    done = flask("init-db")
    assert done.returncode == 0, done.stderr
    assert "Database ready" in done.stdout
    done = flask("create-user", "Teacher@Example.org", "--instructor", "--password", "s3cret-pass")
    assert done.returncode == 0, done.stderr
    assert "Created instructor teacher@example.org" in done.stdout
    done = flask("create-user", "teacher@example.org", "--password", "another-pass")
    assert done.returncode != 0 and "already exists" in done.stderr
    done = flask("create-user", "short@example.org", "--password", "short")
    assert done.returncode != 0 and "at least 8 characters" in done.stderr
    done = flask("create-token", "teacher@example.org", "--name", "ci")
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("dla_")

    app = create_app({"INSTANCE_PATH": str(tmp_path / "inst")})
    client = app.test_client()
    me = client.get("/api/progress", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200 and me.json["user"] == "teacher@example.org"
    with app.app_context():
        user = get_session().scalar(select(User))
        assert user.role == "instructor"
        assert user.password_hash.startswith("scrypt:")  # werkzeug's KDF, never the password
    jobs.shutdown(app)


def test_cookies_are_secure_httponly_and_samesite(web) -> None:  # noqa: ANN001
    response = web.post("/auth/guest")
    assert response.status_code == 302
    cookie = response.headers["Set-Cookie"]
    assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_security_headers(web) -> None:  # noqa: ANN001
    response = web.client.get("/")
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
