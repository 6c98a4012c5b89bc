"""The platform as it runs (gunicorn, one process, 8 threads, the in-process grading runner, a fresh SQLite
database) and HTTP clients that each come from their own loopback address (127.0.0.x), like people on
different machines, or that say who they are through X-Forwarded-For to a server that trusts one proxy."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers import LiveServer


@pytest.fixture
def serve(tmp_path: Path) -> Iterator:
    """serve(**env): a started LiveServer with these environment variables; stopped after the test."""
    servers: list[LiveServer] = []

    def _serve(**env: str) -> LiveServer:
        folder = tmp_path / f"server-{len(servers)}"
        folder.mkdir()
        server = LiveServer(folder, env).start()
        servers.append(server)
        return server
    yield _serve
    for server in servers:
        server.stop()


@pytest.fixture
def server(serve) -> LiveServer:  # noqa: ANN001
    return serve()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for a module's tests that each use their own client addresses."""
    server = LiveServer(tmp_path_factory.mktemp("server"), {}).start()
    yield server
    server.stop()
