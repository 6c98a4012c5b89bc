"""The platform as it runs (academy.serve as scripts/run starts it: one process, 8 threads, the in-process
grading runner, a fresh database) and HTTP clients that each come from their own loopback address (127.0.0.x),
like people on different machines, or that say who they are through X-Forwarded-For to a server that trusts one
proxy.

Every test here runs twice, through the module-scoped `database` fixture: on SQLite (the embedded default)
and on PostgreSQL (one cluster for the whole session, started when first needed; each server gets a fresh
database in it)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.abuse.databases import Database
from tests.support.databases import PostgresServer, postgres_bin
from tests.support.servers import LiveServer


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresServer]:
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    cluster = PostgresServer().start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> Database:
    if request.param == "postgresql":
        return Database("postgresql", request.getfixturevalue("postgres_cluster"))
    return Database("sqlite")


@pytest.fixture
def serve(tmp_path: Path, database: Database) -> Iterator:
    """serve(**env): a started LiveServer on a fresh database with these environment variables; stopped after
    the test."""
    servers: list[LiveServer] = []

    def _serve(**env: str) -> LiveServer:
        folder = tmp_path / f"server-{len(servers)}"
        folder.mkdir()
        server = database.serve(folder, env)
        servers.append(server)
        return server
    yield _serve
    for server in servers:
        server.stop()


@pytest.fixture
def server(serve) -> LiveServer:  # noqa: ANN001
    return serve()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory, database: Database) -> Iterator[LiveServer]:
    """One server for a module's tests that each use their own client addresses."""
    server = database.serve(tmp_path_factory.mktemp("server"))
    yield server
    server.stop()
