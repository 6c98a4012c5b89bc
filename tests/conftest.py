"""Fixtures shared by every test folder."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.helpers import REPO, SHARED_POOLS


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def warm_sandbox() -> Iterator[Callable[[str], object]]:
    """`warm_sandbox("local" | "docker")`: one warm sandbox of that kind (a pool of 2) for the whole session,
    started on first use and shared by every test that only grades through it (a grading process is single-use
    whatever the pool: sharing the pool shares no state between submissions). Tests of the pools themselves
    make their own. Skips, saying why, where that kind cannot run here."""
    made: dict[str, object] = {}

    def get(name: str) -> object:
        from grader.host.sandboxes import get_sandbox
        from sandbox import SandboxError

        if name not in made:
            try:
                made[name] = get_sandbox(name, warm=2)
                SHARED_POOLS.append(made[name].pool)
            except SandboxError as exc:
                made[name] = exc
        if isinstance(made[name], SandboxError):
            pytest.skip(f"no {name} sandbox here: {made[name]}")
        return made[name]

    yield get
    for sandbox in made.values():
        if not isinstance(sandbox, Exception):
            sandbox.close()
            SHARED_POOLS.remove(sandbox.pool)
