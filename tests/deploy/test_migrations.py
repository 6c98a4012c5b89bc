"""Migrations down and up again, on SQLite and on a real PostgreSQL, with rows in the tables they change.
0003: a database from before it that holds several pending submissions of one learner upgrades (the oldest
keeps its place), and afterwards the database itself refuses a second pending submission. 0004, 0005: step
and option ids. 0007: users rebuilt so ids are never reused, every reference kept."""
from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import IntegrityError

from academy.data.db import alembic_config
from tests.support.apps import ready_app
from tests.support.databases import PostgresServer

PENDING_ROW = ("INSERT INTO submissions (user_id, exercise_id, code, status, passed, created_at) "
               "VALUES (1, 'mixed-precision/amp-step', 'x = 1', :status, false, CURRENT_TIMESTAMP)")


def _round_trip(url: str) -> None:
    config = alembic_config(url)
    command.upgrade(config, "head")
    command.downgrade(config, "0002")
    engine = create_engine(url)
    with engine.begin() as connection:
        assert "session_version" not in {c["name"] for c in inspect(connection).get_columns("users")}
        connection.execute(text("INSERT INTO users (id, role, is_guest, created_at) "
                                "VALUES (1, 'learner', true, CURRENT_TIMESTAMP)"))
        for status in ("queued", "running", "queued", "done"):
            connection.execute(text(PENDING_ROW), {"status": status})
    command.upgrade(config, "0006")  # 0007 replaced the session version with a secret
    with engine.begin() as connection:
        rows = connection.execute(text("SELECT id, status FROM submissions ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [(1, "queued"), (2, "error"), (3, "error"), (4, "done")]
        assert connection.execute(text("SELECT session_version FROM users")).scalar() == 0
    command.upgrade(config, "head")
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.execute(text(PENDING_ROW), {"status": "running"})
    command.downgrade(config, "0002")  # and back down cleanly
    command.upgrade(config, "head")
    engine.dispose()


def test_migration_0003_on_sqlite(tmp_path: Path) -> None:
    _round_trip(f"sqlite:///{tmp_path / 'academy.sqlite'}")


def test_migration_0003_on_postgresql(postgres: PostgresServer) -> None:
    _round_trip(postgres.url())


def _step_ids_round_trip(url: str) -> None:
    """0004: positions (step 6, read up to 7) become step ids and visits, and back down again."""
    config = alembic_config(url)
    command.upgrade(config, "0003")
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO users (id, role, is_guest, created_at, session_version) "
                                "VALUES (1, 'learner', true, CURRENT_TIMESTAMP, 0)"))
        connection.execute(text("INSERT INTO lesson_progress (user_id, lesson_id, position, furthest, updated_at) "
                                "VALUES (1, 'mixed-precision', 6, 7, CURRENT_TIMESTAMP), "
                                "(1, 'a-removed-lesson', 3, 3, CURRENT_TIMESTAMP)"))
    command.upgrade(config, "head")
    with engine.begin() as connection:
        resume = dict(connection.execute(text("SELECT lesson_id, step_id FROM lesson_progress")).all())
        assert resume == {"mixed-precision": "meet-gradscaler", "a-removed-lesson": ""}
        seen = connection.execute(text("SELECT step_id FROM step_visits ORDER BY id")).scalars().all()
        assert seen == ["what-mixed-precision-means", "why-half-precision-is-faster", "the-catch-with-16-bit",
                        "meet-autocast", "what-autocast-wraps", "meet-gradscaler", "scale-the-loss"]
    command.downgrade(config, "0003")
    with engine.begin() as connection:
        rows = connection.execute(text("SELECT lesson_id, position, furthest FROM lesson_progress "
                                       "ORDER BY lesson_id")).all()
        assert [tuple(r) for r in rows] == [("a-removed-lesson", 1, 1), ("mixed-precision", 6, 7)]
    command.upgrade(config, "head")
    engine.dispose()


def test_migration_0004_on_sqlite(tmp_path: Path) -> None:
    _step_ids_round_trip(f"sqlite:///{tmp_path / 'academy.sqlite'}")


def test_migration_0004_on_postgresql(postgres: PostgresServer) -> None:
    _step_ids_round_trip(postgres.url())


def _option_ids_round_trip(url: str) -> None:
    """0005: stored quiz answers (0-based choice) become option ids (1-based positions), submissions get a kind
(all "grade"), and back down."""
    config = alembic_config(url)
    command.upgrade(config, "0004")
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO users (id, role, is_guest, created_at, session_version) "
                                "VALUES (1, 'learner', true, CURRENT_TIMESTAMP, 0)"))
        connection.execute(text("INSERT INTO quiz_answers (user_id, lesson_id, question_id, choice, correct, "
                                "created_at) VALUES (1, 'mixed-precision', 'vanishing-gradients', 3, false, "
                                "CURRENT_TIMESTAMP), (1, 'mixed-precision', 'vanishing-gradients', 0, true, "
                                "CURRENT_TIMESTAMP)"))
    command.upgrade(config, "head")
    with engine.begin() as connection:
        rows = connection.execute(text("SELECT option_id, correct FROM quiz_answers ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [("4", False), ("1", True)]
        assert "hint_reveals" in inspect(connection).get_table_names()
        connection.execute(text(PENDING_ROW), {"status": "done"})
        assert connection.execute(text("SELECT kind FROM submissions")).scalars().all() == ["grade"]
    with pytest.raises(IntegrityError), engine.begin() as connection:  # a Run shares the one-pending rule
        connection.execute(text(PENDING_ROW), {"status": "queued"})
        connection.execute(text(PENDING_ROW.replace("passed,", "passed, kind,").replace("false,", "false, 'run',")),
                           {"status": "queued"})
    command.downgrade(config, "0004")
    with engine.begin() as connection:
        assert connection.execute(text("SELECT choice FROM quiz_answers ORDER BY id")).scalars().all() == [3, 0]
        assert "hint_reveals" not in inspect(connection).get_table_names()
    command.upgrade(config, "head")
    engine.dispose()


def test_migration_0005_on_sqlite(tmp_path: Path) -> None:
    _option_ids_round_trip(f"sqlite:///{tmp_path / 'academy.sqlite'}")


def test_migration_0005_on_postgresql(postgres: PostgresServer) -> None:
    _option_ids_round_trip(postgres.url())


CHILD_ROWS = {  # a row per table that references users, inserted for each user (:u) before 0007
    "api_tokens": "(user_id, name, token_hash, prefix, created_at) "
                  "VALUES (:u, 't', 'h' || :u, 'dla_', CURRENT_TIMESTAMP)",
    "submissions": "(user_id, exercise_id, code, status, passed, created_at, kind) "
                   "VALUES (:u, 'mixed-precision/amp-step', 'x = 1', 'done', false, CURRENT_TIMESTAMP, 'grade')",
    "drafts": "(user_id, exercise_id, code, updated_at) "
              "VALUES (:u, 'mixed-precision/amp-step', 'héllo', CURRENT_TIMESTAMP)",
    "lesson_progress": "(user_id, lesson_id, step_id, updated_at) VALUES (:u, 'mixed-precision', 'meet-autocast', "
                       "CURRENT_TIMESTAMP)",
    "step_visits": "(user_id, lesson_id, step_id, seen_at) VALUES (:u, 'mixed-precision', 'meet-autocast', "
                   "CURRENT_TIMESTAMP)",
    "quiz_answers": "(user_id, lesson_id, question_id, option_id, correct, created_at) "
                    "VALUES (:u, 'mixed-precision', 'q', '1', true, CURRENT_TIMESTAMP)",
    "hint_reveals": "(user_id, submission_id, check_id, number, revealed_at) "
                    "SELECT :u, max(id), 'runs', 1, CURRENT_TIMESTAMP FROM submissions WHERE user_id = :u",
}


def _owners(connection, table: str) -> list[int]:  # noqa: ANN001
    return connection.execute(text(f"SELECT user_id FROM {table} ORDER BY user_id")).scalars().all()


def _identity_round_trip(url: str, upgrade_to_head) -> None:  # noqa: ANN001
    """0007: `users` rebuilt (SQLite: AUTOINCREMENT) keeps every id and every row that references one; rows of a
    user deleted by hand (foreign keys off) go; each user gets its own random session secret; drafts their
    size; an id freed after it is never handed out again; and back down."""
    config = alembic_config(url)
    command.upgrade(config, "0006")
    engine = create_engine(url)  # on SQLite without the app's pragmas: foreign keys off, as in the sqlite3 shell
    with engine.begin() as connection:
        for _ in range(3):
            connection.execute(text("INSERT INTO users (role, is_guest, created_at, session_version) "
                                    "VALUES ('learner', true, CURRENT_TIMESTAMP, 0)"))
        for user_id in (1, 2, 3):
            for table, values in CHILD_ROWS.items():
                connection.execute(text(f"INSERT INTO {table} {values}"), {"u": user_id})
        connection.execute(text("DELETE FROM users WHERE id = 3"))  # SQLite: its rows stay behind
    upgrade_to_head()
    with engine.begin() as connection:
        users = connection.execute(text("SELECT id, session_secret FROM users ORDER BY id")).all()
        assert [row.id for row in users] == [1, 2]
        assert len({row.session_secret for row in users}) == 2 and all(len(row.session_secret) >= 40 for row in users)
        for table in CHILD_ROWS:
            assert _owners(connection, table) == [1, 2], table
        assert connection.execute(text("SELECT size_bytes FROM drafts")).scalars().all() == [6, 6]  # 'héllo'
        if engine.dialect.name == "sqlite":
            schema = connection.execute(text("SELECT sql FROM sqlite_master WHERE name = 'users'")).scalar()
            assert "AUTOINCREMENT" in schema
            assert connection.execute(text("PRAGMA foreign_key_check")).all() == []
        new = "INSERT INTO users (role, is_guest, created_at, session_secret) VALUES ('learner', true, " \
              "CURRENT_TIMESTAMP, 's') RETURNING id"
        freed = connection.execute(text(new)).scalar()
        connection.execute(text("DELETE FROM users WHERE id = :id"), {"id": freed})
        assert connection.execute(text(new)).scalar() == freed + 1  # the freed id is never handed out again
    command.downgrade(config, "0006")
    with engine.begin() as connection:
        users = connection.execute(text("SELECT id, session_version FROM users ORDER BY id")).all()
        assert [tuple(user) for user in users] == [(1, 0), (2, 0), (freed + 1, 0)]
        assert _owners(connection, "drafts") == [1, 2]
    command.upgrade(config, "head")
    engine.dispose()


def test_migration_0007_on_sqlite_through_the_app(tmp_path: Path) -> None:
    """The app migrates with its own engine, whose SQLite connections have foreign keys on: rebuilding `users`
    must not cascade-delete what references it (academy.data.db.upgrade turns them off around the migrations)."""
    url = f"sqlite:///{tmp_path / 'academy.sqlite'}"
    made = []

    def through_the_app() -> None:  # what `flask --app academy init-db` runs
        made.append(ready_app({"INSTANCE_PATH": str(tmp_path / "instance"), "DATABASE_URL": url,
                               "SANDBOX": "local", "SECRET_KEY": "test", "TESTING": True,
                               "REQUEUE_ON_START": False}))
        with made[0].extensions["academy.engine"].connect() as connection:
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1  # on again afterwards

    _identity_round_trip(url, through_the_app)
    from academy import jobs
    jobs.shutdown(made[0])


def test_migration_0007_on_postgresql(postgres: PostgresServer) -> None:
    url = postgres.url()
    _identity_round_trip(url, lambda: command.upgrade(alembic_config(url), "head"))


def _names_round_trip(url: str) -> None:
    """0009: names and SIS ids added to `users` in place (its ids, its AUTOINCREMENT and what references it
    untouched), an SIS id unique where set, the validation's content hash, the LTI tables (an LMS user is one
    identity per registration, deployment and sub); and back down to 0008 and up."""
    config = alembic_config(url)
    command.upgrade(config, "0008")
    engine = create_engine(url)
    with engine.begin() as connection:
        for email in ("a@example.org", "b@example.org"):
            connection.execute(text("INSERT INTO users (email, role, is_guest, created_at, session_secret) "
                                    "VALUES (:e, 'learner', false, CURRENT_TIMESTAMP, 's')"), {"e": email})
        connection.execute(text(f"INSERT INTO submissions {CHILD_ROWS['submissions']}"), {"u": 2})
        connection.execute(text("INSERT INTO validation_runs (exercise_id, status, created_at) "
                                "VALUES ('mixed-precision/amp-step', 'ok', CURRENT_TIMESTAMP)"))
    command.upgrade(config, "0009")
    with engine.begin() as connection:
        assert connection.execute(text("SELECT id, name, sis_id FROM users ORDER BY id")).all() == [
            (1, None, None), (2, None, None)]
        connection.execute(text("UPDATE users SET name = 'Ada', sis_id = 'S-1' WHERE id = 1"))
        connection.execute(text("UPDATE users SET sis_id = NULL WHERE id = 2"))  # many accounts without one
        assert _owners(connection, "submissions") == [2]
        assert connection.execute(text("SELECT content_hash FROM validation_runs")).scalar() is None
        if engine.dialect.name == "sqlite":
            schema = connection.execute(text("SELECT sql FROM sqlite_master WHERE name = 'users'")).scalar()
            assert "AUTOINCREMENT" in schema
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.execute(text("UPDATE users SET sis_id = 'S-1' WHERE id = 2"))
    with engine.begin() as connection:  # the LTI tables: a registration, its deployment, an LMS user's account
        connection.execute(text("INSERT INTO lti_platforms (name, issuer, client_id, auth_login_url, auth_token_url, "
                                "key_set_url, tool_private_key, tool_kid, created_at) VALUES ('LMS', 'https://lms', "
                                "'c', 'https://lms/a', 'https://lms/t', 'https://lms/k', 'pem', 'kid', "
                                "CURRENT_TIMESTAMP)"))
        connection.execute(text("INSERT INTO lti_identities (platform_id, deployment_id, sub, user_id, created_at, "
                                "last_launch_at) VALUES (1, 'd', 's', 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"))
    with pytest.raises(IntegrityError), engine.begin() as connection:  # one identity per (platform, deployment, sub)
        connection.execute(text("INSERT INTO lti_identities (platform_id, deployment_id, sub, user_id, created_at, "
                                "last_launch_at) VALUES (1, 'd', 's', 2, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"))
    command.downgrade(config, "0008")
    with engine.begin() as connection:
        assert "sis_id" not in {c["name"] for c in inspect(connection).get_columns("users")}
        assert not inspect(connection).has_table("lti_identities")
        assert connection.execute(text("SELECT id, email FROM users ORDER BY id")).all() == [
            (1, "a@example.org"), (2, "b@example.org")]
    command.upgrade(config, "head")
    engine.dispose()


def test_migration_0009_on_sqlite(tmp_path: Path) -> None:
    _names_round_trip(f"sqlite:///{tmp_path / 'academy.sqlite'}")


def test_migration_0009_on_postgresql(postgres: PostgresServer) -> None:
    _names_round_trip(postgres.url())


def _confirmed_emails_round_trip(url: str) -> None:
    """0011: accounts from before it stay unconfirmed (nobody proved their address), the columns added to `users`
    in place, and the sign-up links' mail log; down to 0010 and up."""
    config = alembic_config(url)
    command.upgrade(config, "0010")
    engine = create_engine(url)
    with engine.begin() as connection:
        for email in ("a@example.org", "b@example.org"):
            connection.execute(text("INSERT INTO users (email, role, is_guest, created_at, session_secret) "
                                    "VALUES (:e, 'learner', false, CURRENT_TIMESTAMP, 's')"), {"e": email})
        connection.execute(text("INSERT INTO users (role, is_guest, created_at, session_secret) "
                                "VALUES ('learner', true, CURRENT_TIMESTAMP, 's')"))
    command.upgrade(config, "0011")
    with engine.begin() as connection:
        assert connection.execute(text("SELECT id, email_confirmed_at, confirmation_sent_at FROM users "
                                       "ORDER BY id")).all() == [(1, None, None), (2, None, None), (3, None, None)]
        connection.execute(text("INSERT INTO signup_link_mails (email, sent_at) "
                                "VALUES ('a@example.org', CURRENT_TIMESTAMP)"))
        assert connection.execute(text("SELECT email FROM signup_link_mails")).all() == [("a@example.org",)]
    command.downgrade(config, "0010")
    with engine.begin() as connection:
        assert "email_confirmed_at" not in {c["name"] for c in inspect(connection).get_columns("users")}
        assert not inspect(connection).has_table("signup_link_mails")
        assert connection.execute(text("SELECT id, email FROM users ORDER BY id")).all() == [
            (1, "a@example.org"), (2, "b@example.org"), (3, None)]
    command.upgrade(config, "head")
    engine.dispose()


def test_migration_0011_on_sqlite(tmp_path: Path) -> None:
    _confirmed_emails_round_trip(f"sqlite:///{tmp_path / 'academy.sqlite'}")


def test_migration_0011_on_postgresql(postgres: PostgresServer) -> None:
    _confirmed_emails_round_trip(postgres.url())


def test_the_schema_the_app_checks_for_is_alembics_head() -> None:
    """academy.data.db.SCHEMA_REVISION (what the app's first session checks, without importing Alembic) names the
    newest migration: a new migration without it fails here, not in an operator's `503`."""
    from alembic.script import ScriptDirectory

    from academy.data.db import SCHEMA_REVISION

    assert ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads() == [SCHEMA_REVISION]


def _lti_registrations_round_trip(url: str) -> None:
    """0012 keeps a removed LTI registration's row (removed_at) so its learners keep their accounts: upgrading keeps
    every registration in use with its identities; downgrading deletes only the removed ones, as removal did then."""
    config = alembic_config(url)
    command.upgrade(config, "0011")
    engine = create_engine(url)
    platform = ("INSERT INTO lti_platforms (id, name, issuer, client_id, auth_login_url, auth_token_url, key_set_url,"
                " tool_private_key, tool_kid, created_at) VALUES (:id, 'LMS', :issuer, 'c', 'https://l/a', "
                "'https://l/t', 'https://l/k', 'pem', :kid, CURRENT_TIMESTAMP)")
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO users (id, role, is_guest, created_at, session_secret) "
                                "VALUES (1, 'learner', false, CURRENT_TIMESTAMP, 's1'), "
                                "(2, 'learner', false, CURRENT_TIMESTAMP, 's2')"))
        for n in (1, 2):
            connection.execute(text(platform), {"id": n, "issuer": f"https://lms-{n}.example", "kid": f"k{n}"})
            connection.execute(text("INSERT INTO lti_deployments (platform_id, deployment_id) VALUES (:n, 'd')"),
                               {"n": n})
            connection.execute(text("INSERT INTO lti_identities (platform_id, deployment_id, sub, user_id, created_at,"
                                    " last_launch_at) VALUES (:n, 'd', 's', :n, CURRENT_TIMESTAMP, "
                                    "CURRENT_TIMESTAMP)"), {"n": n})
    command.upgrade(config, "0012")
    with engine.begin() as connection:
        assert connection.execute(text("SELECT id, removed_at FROM lti_platforms ORDER BY id")).all() == [
            (1, None), (2, None)]
        assert connection.execute(text("SELECT count(*) FROM lti_identities")).scalar() == 2
        connection.execute(text("UPDATE lti_platforms SET removed_at = CURRENT_TIMESTAMP WHERE id = 2"))
    command.downgrade(config, "0011")
    with engine.begin() as connection:
        assert connection.execute(text("SELECT id FROM lti_platforms")).scalars().all() == [1]
        assert connection.execute(text("SELECT platform_id FROM lti_identities")).scalars().all() == [1]
        assert connection.execute(text("SELECT platform_id FROM lti_deployments")).scalars().all() == [1]
        assert "removed_at" not in {c["name"] for c in inspect(connection).get_columns("lti_platforms")}
    command.upgrade(config, "head")
    engine.dispose()


def test_migration_0012_on_sqlite(tmp_path: Path) -> None:
    _lti_registrations_round_trip(f"sqlite:///{tmp_path / 'academy.sqlite'}")
