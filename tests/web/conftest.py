"""A fresh app per test: its own instance folder and SQLite database, the local sandbox."""
from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from academy import create_app, jobs
from academy.db import get_session
from academy.models import Submission

REPO = Path(__file__).resolve().parents[2]
LESSON = "mixed-precision"
EXERCISE = "mixed-precision/amp-step"


@pytest.fixture
def make_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    # The embedded defaults, whatever the calling shell has set.
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_INSTANCE", "DLA_SANDBOX", "DLA_EXERCISES", "SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    apps: list[Flask] = []

    def _make(**config: Any) -> Flask:
        app = create_app({"INSTANCE_PATH": str(tmp_path / "instance"), "SANDBOX": "local",
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


class WebSession:
    """A test client that keeps the CSRF token like the real pages do."""

    def __init__(self, client: FlaskClient):
        self.client = client

    def csrf(self) -> str:
        page = self.client.get("/").get_data(as_text=True)
        return re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)

    def post(self, url: str, **kwargs: Any):  # noqa: ANN201
        data = kwargs.pop("data", {})
        return self.client.post(url, data={"csrf_token": self.csrf(), **data}, **kwargs)

    def api(self, method: str, url: str, json: Any = None, **kwargs: Any):  # noqa: ANN201
        headers = {"X-CSRF-Token": self.csrf(), **kwargs.pop("headers", {})}
        return self.client.open(url, method=method, json=json, headers=headers, **kwargs)

    def guest(self) -> "WebSession":
        self.post("/auth/guest")
        return self

    def signup(self, email: str, password: str = "password123"):  # noqa: ANN201
        return self.post("/auth/signup", data={"email": email, "password": password})

    def signin(self, email: str, password: str = "password123"):  # noqa: ANN201
        return self.post("/auth/signin", data={"email": email, "password": password})


@pytest.fixture
def web(app: Flask) -> WebSession:
    return WebSession(app.test_client())


def new_session(app: Flask) -> WebSession:
    return WebSession(app.test_client())


def wait_for(app: Flask, submission_id: int, timeout: float = 120) -> Submission:
    deadline = time.monotonic() + timeout
    while True:
        with app.app_context():
            submission = get_session().get(Submission, submission_id)
            if submission.status in ("done", "error"):
                return submission
        if time.monotonic() > deadline:
            raise AssertionError(f"submission {submission_id} still {submission.status}")
        time.sleep(0.2)
