"""The app factory, the database and its migrations, the instance that init-db makes ready, and the administrator
commands."""
from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import inspect, select

from academy import create_app, jobs
from academy.data.db import get_session
from academy.data.models import User
from academy.settings import InstanceNotReady
from tests.support.paths import REPO


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


# --- create_app reads settings only; init-db makes the instance ready (academy/instance.py)

def _cli(*args: str) -> Any:
    """`flask --app academy ARGS` in this process (academy/__main__.py's group): the app is made as the command
    makes it, within the command's click context."""
    from academy.__main__ import cli

    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def instance_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new instance folder named by DLA_INSTANCE, as an administrator's shell would have it."""
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_EXERCISES", "SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "instance"
    monkeypatch.setenv("DLA_INSTANCE", str(folder))
    return folder


def test_create_app_writes_nothing_and_reads_no_course(tmp_path: Path) -> None:
    folder = tmp_path / "new-instance"
    app = create_app({"INSTANCE_PATH": str(folder), "SECRET_KEY": "test", "TESTING": True})
    assert not folder.exists()  # no folder, no database, no key file
    assert app.extensions["academy.content"] is None  # the course is read by the first get_content()
    # Served before `init-db`: every request that needs the database says what to run, and still nothing is made.
    browser = app.test_client()
    with browser.session_transaction() as cookie:
        cookie.update(user_id=1, k="a learner's cookie from before")
    page = browser.get("/account")
    assert page.status_code == 503 and page.headers["Retry-After"] == "60"
    assert "its administrator must run `flask --app academy init-db`" in page.get_data(as_text=True)
    assert "sqlite" not in page.get_data(as_text=True)  # where the database is stays in the log
    api = app.test_client().get("/api/progress", headers={"Authorization": "Bearer dla_x"})
    assert api.status_code == 503 and "init-db" in api.json["error"]
    assert not folder.exists()
    jobs.shutdown(app)


def test_a_serving_app_without_a_secret_key_refuses_to_start_and_says_how_to_make_one(tmp_path: Path,
                                                                                     monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("SECRET_KEY", raising=False)
    folder = tmp_path / "instance"
    with pytest.raises(InstanceNotReady, match=r"No secret key: run `flask --app academy init-db` \(it creates "
                                               rf"{re.escape(str(folder / 'secret_key'))}\), or set SECRET_KEY"):
        create_app({"INSTANCE_PATH": str(folder)})
    folder.mkdir()
    (folder / "secret_key").write_text("\n")
    with pytest.raises(InstanceNotReady, match="is empty"):
        create_app({"INSTANCE_PATH": str(folder)})
    assert (folder / "secret_key").read_text() == "\n"  # never replaced by the app


def test_flask_run_without_a_key_refuses_to_serve(instance_env: Path) -> None:
    with socket.socket() as busy:  # a port that is taken: were the app made, the server would stop at once
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        refused = _cli("run", "--port", str(busy.getsockname()[1]))  # `run` serves pages: it needs the key
    assert isinstance(refused.exception, InstanceNotReady) and "No secret key" in str(refused.exception)


def test_init_db_makes_the_instance_and_commands_need_no_key(instance_env: Path) -> None:
    refused = _cli("create-user", "early@example.org", "--password", "long enough")
    assert refused.exit_code == 1
    assert "has no tables yet: run `flask --app academy init-db` to create them" in refused.output
    assert not instance_env.exists()  # the refused command made nothing either

    done = _cli("init-db")
    assert done.exit_code == 0, done.output
    key_file = instance_env / "secret_key"
    assert f"Secret key: {key_file} (created)" in done.output and "Database ready: sqlite:///" in done.output
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text()
    again = _cli("init-db")  # idempotent: the same key, the schema already at head
    assert again.exit_code == 0 and "(created)" not in again.output and key_file.read_text() == key
    assert create_app().secret_key == key  # what a serving app signs cookies with

    key_file.unlink()  # an administrator's command signs no cookie: it runs without a key, and makes none
    made = _cli("create-user", "keyless@example.org", "--password", "long enough")
    assert made.exit_code == 0, made.output
    assert not key_file.exists()


def test_a_database_behind_the_code_is_refused_until_init_db(instance_env: Path) -> None:
    from alembic import command

    from academy.data.db import SCHEMA_REVISION, alembic_config

    assert _cli("init-db").exit_code == 0
    url = f"sqlite:///{instance_env / 'academy.sqlite'}"
    command.downgrade(alembic_config(url), "0006")  # as an older version of the app left it
    app = create_app({"REQUEUE_ON_START": False})
    refused = _cli("create-token", "nobody@example.org")
    assert refused.exit_code == 1
    assert f"is at migration 0006, but this version of the app needs {SCHEMA_REVISION}: run `flask --app academy " \
           "init-db` to upgrade it" in refused.output
    assert app.test_client().get("/api/exercises").status_code == 200  # no database needed: served
    token = {"Authorization": "Bearer dla_not-a-token"}
    assert app.test_client().get("/api/progress", headers=token).status_code == 503
    assert _cli("init-db").exit_code == 0
    assert app.test_client().get("/api/progress", headers=token).status_code == 401  # the same process, once
    # the schema is current: the token is looked up (and is not one)
    jobs.shutdown(app)


def test_the_course_is_loaded_on_first_use_once_for_every_thread(app, monkeypatch) -> None:  # noqa: ANN001
    from academy import content

    assert app.extensions["academy.content"] is None
    loads: list[int] = []
    real = content.build_content

    def slow_build(root: Any) -> content.Content:
        loads.append(threading.get_ident())
        time.sleep(0.2)  # long enough for every other thread to ask meanwhile
        return real(root)

    monkeypatch.setattr(content, "build_content", slow_build)
    barrier = threading.Barrier(8)
    seen: list[content.Content] = []

    def ask() -> None:
        barrier.wait()
        seen.append(content.get_content(app))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1 and len(seen) == 8 and all(each is seen[0] for each in seen)
    assert "mixed-precision/amp-step" in seen[0].course.exercises


def test_administrators_commands_import_neither_torch_nor_the_course(instance_env: Path) -> None:
    """`create-user`, `create-token`, `init-db` and `--help` need neither, nor the web front (the blueprints,
    the translations, the course's YAML, the result schema): each runs in a fresh interpreter whose course loader
    fails loudly, and then says which heavy modules it imported."""
    probe = ("import sys\n"
             "import academy.content\n"
             "def refuse(root): raise SystemExit('the course was loaded')\n"
             "academy.content.build_content = refuse\n"
             "from academy.__main__ import cli\n"
             "try:\n"
             "    cli.main(sys.argv[1:], prog_name='flask')\n"
             "except SystemExit as exc:\n"
             "    assert not exc.code, exc.code\n"
             # (not pygments: init-db's Alembic imports it through Mako)
             "heavy = ('torch', 'numpy', 'markdown_it', 'nh3', 'jsonschema', 'sandbox.local', 'sandbox.docker',\n"
             "         'sandbox.jail', 'grader.host.grading', 'yaml', 'grader.core.course', 'grader.core.result',\n"
             "         'flask_babel', 'academy.web.api', 'academy.web.lessons', 'academy.web.instructor',\n"
             "         'academy.web.auth', 'academy.web.security', 'academy.i18n', 'academy.lti', 'pylti1p3', 'jwt',\n"
             "         'requests')\n"
             "print('imported:', sorted(name for name in heavy if name in sys.modules))\n")
    env = {**os.environ, "DLA_SANDBOX": "local"}
    for args in (["--help"], ["init-db"], ["create-user", "a@example.org", "--password", "long enough"],
                 ["create-token", "a@example.org"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], env=env, cwd=REPO, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, (args, done.stdout + done.stderr)
        # init-db's migration 0004 reads the course's lessons (step numbers to step ids), each file against its
        # JSON Schema (grader/core/coursefiles.py); nothing else does.
        expected = "imported: ['grader.core.course', 'jsonschema', 'yaml']" if args == ["init-db"] \
            else "imported: []"
        assert expected in done.stdout, (args, done.stdout)


def test_the_error_page_is_drawn_after_a_failed_flush(app) -> None:  # noqa: ANN001
    """A view whose flush failed (a unique key taken at the same moment) still gets the site's 500 page for a
    signed-in learner: the handler rolls the session back before the page reads the user (else it fails again,
    and the server answers a bare 500 of its own)."""
    from academy.data.db import get_session
    from academy.data.models import User
    from tests.support.apps import new_session

    def collide() -> str:
        db = get_session()
        db.add_all([User(email="same@example.org"), User(email="same@example.org")])
        db.flush()
        return "unreachable"

    app.add_url_rule("/collide", "collide", collide)
    app.config["PROPAGATE_EXCEPTIONS"] = False  # as served: an exception is a 500 page
    learner = new_session(app)
    assert learner.signup("learner@example.org").status_code == 302
    answer = learner.client.get("/collide")
    page = answer.get_data(as_text=True)
    assert answer.status_code == 500 and "learner@example.org" in page, page[:500]
