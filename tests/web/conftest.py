"""A fresh app per test: its own instance folder and SQLite database (made ready as `init-db` does), the local
sandbox."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest
from flask import Flask

from academy import jobs
from tests.helpers import REPO, WebSession, ready_app


@pytest.fixture
def make_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    # The embedded defaults, whatever the calling shell has set.
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_INSTANCE", "DLA_SANDBOX", "DLA_EXERCISES", "SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    apps: list[Flask] = []

    def _make(**config: Any) -> Flask:
        app = ready_app({"INSTANCE_PATH": str(tmp_path / "instance"), "SANDBOX": "local",
                         "SECRET_KEY": "test", "TESTING": True, **config})
        apps.append(app)
        return app
    yield _make
    for app in apps:
        jobs.shutdown(app)


@pytest.fixture
def app(make_app) -> Flask:  # noqa: ANN001
    return make_app()


@pytest.fixture
def exercises_copy(tmp_path: Path) -> Path:
    """A private copy of the course that a test may edit."""
    target = tmp_path / "exercises"
    shutil.copytree(REPO / "exercises", target)
    return target


@pytest.fixture
def web(app: Flask) -> WebSession:
    return WebSession(app.test_client())




