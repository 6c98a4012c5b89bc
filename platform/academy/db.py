"""The database: one engine per app, one session per request (or background job), Alembic migrations.

SQLite in the instance folder by default; any SQLAlchemy URL through DATABASE_URL.
"""
from __future__ import annotations

from pathlib import Path

import click
from alembic import command
from alembic.config import Config
from flask import Flask, current_app, g
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from academy.settings import settings

MIGRATIONS = Path(__file__).parent / "migrations"


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
    """The session of this request or job; closed when its app context ends."""
    if "db_session" not in g:
        g.db_session = current_app.extensions["academy.sessionmaker"]()
    return g.db_session


def close_session(_exc: BaseException | None = None) -> None:
    session = g.pop("db_session", None)
    if session is not None:
        session.close()


def alembic_config(url: str) -> Config:
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


@click.command("init-db")
def init_db_command() -> None:
    """Create or upgrade the database schema (Alembic migrations)."""
    upgrade(current_app)
    click.echo(f"Database ready: {current_app.extensions['academy.engine'].url.render_as_string()}")


def init_app(app: Flask) -> None:
    engine = make_engine(settings(app).database_url)
    app.extensions["academy.engine"] = engine
    app.extensions["academy.sessionmaker"] = sessionmaker(engine, expire_on_commit=False)
    app.teardown_appcontext(close_session)
    app.cli.add_command(init_db_command)
