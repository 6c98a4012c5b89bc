"""The database: one engine per app, one session per request (or background job), Alembic migrations.

SQLite in the instance folder by default; any SQLAlchemy URL through DATABASE_URL. Migrations run only when
asked (`flask --app academy init-db`, academy/instance.py): several gunicorn workers starting at once must
not race to apply them, and a command that only reads should not wait for them. Instead the first session
of an app checks that the schema is the one this code was written for (`check_schema`), and otherwise
refuses with a message naming the command that fixes it, rather than failing later on a missing column.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from flask import Flask, current_app, g
from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from academy.settings import InstanceNotReady, settings

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"
# The newest migration in migrations/versions: the schema this code reads and writes. A constant rather than
# Alembic's own answer, so that commands which only check it need not import Alembic (a fifth of a second);
# tests/deploy/test_migrations.py holds it equal to Alembic's head.
SCHEMA_REVISION = "0012"
INIT_DB = "flask --app academy init-db"


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        # Grading jobs write from background threads while web requests read: WAL lets readers and one
        # writer proceed together, and busy_timeout makes a second writer wait instead of failing.
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # noqa: ANN001
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


def get_session() -> Session:
    """The session of this request or job; closed when its app context ends. The app's first one checks the
    schema (InstanceNotReady when it is missing or behind)."""
    if "db_session" not in g:
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        if not app.extensions["academy.schema_ok"].is_set():
            check_schema(app)
        g.db_session = app.extensions["academy.sessionmaker"]()
    return g.db_session


def schema_revision(engine: Engine) -> str | None:
    """The migration the database is at (Alembic's alembic_version table), None for a database without it."""
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database and database != ":memory:" and not Path(database).exists():
        return None  # not made yet; connecting would make an empty file (or fail, without its folder)
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def check_schema(app: Flask) -> None:
    """InstanceNotReady unless the database is at SCHEMA_REVISION; remembered once it is (a schema that is
    still behind is asked again next time, so the app recovers as soon as `init-db` has run)."""
    engine = app.extensions["academy.engine"]
    revision = schema_revision(engine)
    where = engine.url.render_as_string()  # the password hidden
    if revision is None:
        raise InstanceNotReady(f"The database {where} has no tables yet: run `{INIT_DB}` to create them.")
    if revision != SCHEMA_REVISION:
        raise InstanceNotReady(f"The database {where} is at migration {revision}, but this version of the app needs "
                               f"{SCHEMA_REVISION}: run `{INIT_DB}` to upgrade it (docs/deploy.md, \"Upgrading\").")
    app.extensions["academy.schema_ok"].set()


def close_session(_exc: BaseException | None = None) -> None:
    session = g.pop("db_session", None)
    if session is not None:
        session.close()


def alembic_config(url: str) -> Config:
    from alembic.config import Config  # only where migrations run: a fifth of a second of every command

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(app: Flask) -> None:
    """Bring the schema up to the newest migration (a no-op when it already is).

    On SQLite the migrations run with foreign keys off, as SQLite's own recipe for rebuilding a table says
    (https://www.sqlite.org/lang_altertable.html, "other kinds of table schema changes"): with them on,
    dropping the old copy of a rebuilt table deletes every row that references it (ON DELETE CASCADE).
    They are checked afterwards and turned on again."""
    from alembic import command

    config = alembic_config(settings(app).database_url)
    config.attributes["course_root"] = settings(app).exercises_dir  # 0004 maps step numbers to ids
    engine = app.extensions["academy.engine"]
    if engine.dialect.name != "sqlite":
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
        return
    with engine.connect() as connection:
        # Outside any transaction (SQLite ignores this pragma inside one), on this one connection.
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        if connection.exec_driver_sql("PRAGMA foreign_keys").scalar():
            raise RuntimeError("SQLite kept foreign keys on; migrations that rebuild a table would delete rows")
        connection.commit()  # SQLAlchemy's own autobegun transaction around the pragmas
        try:
            with connection.begin():
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
                broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
                if broken:
                    raise RuntimeError(f"after the migrations, rows reference missing rows: {broken[:5]}")
        finally:
            connection.exec_driver_sql("PRAGMA foreign_keys=ON")
            connection.commit()

    app.extensions["academy.schema_ok"].set()


def init_app(app: Flask) -> None:
    """The engine and its sessions; nothing connects until the first session is asked for."""
    engine = make_engine(settings(app).database_url)
    app.extensions["academy.engine"] = engine
    app.extensions["academy.sessionmaker"] = sessionmaker(engine, expire_on_commit=False)
    app.extensions["academy.schema_ok"] = threading.Event()
    app.teardown_appcontext(close_session)
