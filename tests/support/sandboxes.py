"""The Docker sandbox's tests: the grading containers the engine holds, but those of the session's shared
warm pools (tests/conftest.py: warm_sandbox)."""
from __future__ import annotations

import subprocess
import time
from typing import Any

# Warm pools the whole test session shares (tests/conftest.py's warm_sandbox): their containers are not left
# behind by any one test.
SHARED_POOLS: list[Any] = []


def grading_containers() -> list[str]:
    """Every grading container the engine knows, running or not, but those of the session's shared pools."""
    from sandbox.docker import CONTAINER_LABEL

    out = subprocess.run(["docker", "ps", "-a", "--filter", f"label={CONTAINER_LABEL}", "--format", "{{.Names}}"],
                         capture_output=True, text=True, check=True).stdout
    shared = {name for pool in SHARED_POOLS for name in pool.members()}
    return [name for name in out.split() if name not in shared]


def wait_no_grading_containers(timeout: float = 20) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := grading_containers()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left
