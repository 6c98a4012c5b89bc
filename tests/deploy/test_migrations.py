"""Migration 0003 down and up again, on SQLite and on a real PostgreSQL: a database from before it that holds
several pending submissions of one learner upgrades (the oldest keeps its place), and afterwards the
database itself refuses a second pending submission."""
from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import IntegrityError

from academy.db import alembic_config
from tests.helpers import PostgresServer

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
    command.upgrade(config, "head")
    with engine.begin() as connection:
        rows = connection.execute(text("SELECT id, status FROM submissions ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [(1, "queued"), (2, "error"), (3, "error"), (4, "done")]
        assert connection.execute(text("SELECT session_version FROM users")).scalar() == 0
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
