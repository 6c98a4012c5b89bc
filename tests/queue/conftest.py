"""A real redis-server on a free loopback port, the web app on RQ, and RQ worker processes to kill."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.support.queues import QueueStack, RedisServer


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    folder = tmp_path / "redis"
    folder.mkdir()
    server = RedisServer(folder).start()
    yield server
    server.stop()


@pytest.fixture
def make_stack(tmp_path: Path, redis_server: RedisServer) -> Iterator:
    stacks: list[QueueStack] = []

    def _make(**env: str) -> QueueStack:
        stack = QueueStack(tmp_path, redis_server, **env)
        stacks.append(stack)
        return stack
    yield _make
    for stack in stacks:
        stack.close()
