"""The web tests' fixtures beside tests/conftest.py's `app` and `make_app` (a fresh app per test: its own instance
folder and SQLite database, made ready as `init-db` does, the local sandbox): a private copy of the course, a
test client that keeps the CSRF token, and jobs held until the test lets them go."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from flask import Flask

from tests.support.apps import WebSession
from tests.support.held_jobs import HeldJobs
from tests.support.paths import REPO


@pytest.fixture
def exercises_copy(tmp_path: Path) -> Path:
    """A private copy of the course that a test may edit."""
    target = tmp_path / "exercises"
    shutil.copytree(REPO / "exercises", target)
    return target


@pytest.fixture
def web(app: Flask) -> WebSession:
    return WebSession(app.test_client())


@pytest.fixture
def hold():  # noqa: ANN201
    """HeldJobs for an app; every held job is let go at the end, so the app's shutdown never waits for one."""
    made: list[HeldJobs] = []

    def _hold(app, finish: str = "announce") -> HeldJobs:  # noqa: ANN001
        made.append(HeldJobs(app, finish))
        return made[-1]
    yield _hold
    for held in made:
        held.release.set()
