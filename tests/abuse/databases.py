"""Where the abuse tests' servers keep their data: the embedded default (SQLite, a file in each server's
instance folder) or PostgreSQL (one cluster for the whole test session, a fresh database for each server), and
the database as a server's administrator reaches it (through the app's models, on either)."""
from __future__ import annotations

import itertools
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from tests.support.databases import PostgresServer
from tests.support.servers import LiveServer

_names = itertools.count(1)


class Database:
    """One kind of database ("sqlite" or "postgresql") that servers are started on."""

    def __init__(self, kind: str, cluster: PostgresServer | None = None):
        self.kind, self.cluster = kind, cluster

    def env(self) -> dict[str, str]:
        """What a new server needs to get a database of its own: nothing on SQLite (its instance folder holds
        one), on PostgreSQL a DATABASE_URL naming a database just made in the session's cluster."""
        if self.cluster is None:
            return {}
        name = f"abuse_{next(_names)}"
        engine = create_engine(self.cluster.url("postgres"), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()
        return {"DATABASE_URL": self.cluster.url(name)}

    def serve(self, folder: Path, env: dict[str, str] | None = None) -> LiveServer:
        """A started LiveServer in `folder` on a fresh database of this kind, with these settings."""
        return LiveServer(folder, {**self.env(), **(env or {})}).start()


def url(server: LiveServer) -> str:
    """The SQLAlchemy URL of `server`'s database."""
    return server.env.get("DATABASE_URL") or f"sqlite:///{server.instance / 'academy.sqlite'}"


@contextmanager
def admin(server: LiveServer) -> Iterator[Session]:
    """`server`'s database as its administrator edits it, with the app's models, on SQLite or PostgreSQL:
    committed when the block ends."""
    engine = create_engine(url(server))
    try:
        with Session(engine) as db, db.begin():
            yield db
    finally:
        engine.dispose()
