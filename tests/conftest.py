"""Fixtures shared by every test folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXERCISES = REPO / "exercises"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def run_grader(*args: str, stdin: bytes | None = None, timeout: float = 120,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the installed `grader` console script, as a user would."""
    grader = Path(sys.executable).with_name("grader")
    return subprocess.run([str(grader), *args], capture_output=True, input=stdin, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=REPO)


def check_json(exercise: str, path: Path, *extra: str) -> tuple[int, dict]:
    proc = run_grader("check", exercise, str(path), "--json", "--sandbox", "local", *extra)
    assert proc.stdout, proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)
