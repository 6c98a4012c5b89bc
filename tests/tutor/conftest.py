"""The tutor's tests: apps that talk to the real embedded model server (tests/conftest.py: tutor_model, one per
run), and one real failing amp-step grading that the tests which need a verdict share."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from flask import Flask

from academy import jobs
from tests.support.apps import WebSession, ready_app, wait_for
from tests.support.tutor import LESSON, RAW_BACKWARD, STEP, TEST_MAX_TOKENS


@pytest.fixture
def make_tutor_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Flask]]:
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_INSTANCE", "DLA_SANDBOX", "DLA_EXERCISES", "SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    apps: list[Flask] = []

    def make(**config: Any) -> Flask:
        folder = tmp_path / f"instance-{len(apps)}"
        app = ready_app({"INSTANCE_PATH": str(folder), "SANDBOX": "local", "SECRET_KEY": "test", "TESTING": True,
                         "REQUEUE_ON_START": False, "WARM_POOL": 0, "TUTOR_MAX_TOKENS": TEST_MAX_TOKENS, **config})
        apps.append(app)
        return app
    yield make
    for app in apps:
        jobs.shutdown(app)


@pytest.fixture(scope="session")
def graded(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Path]:
    """An instance whose learner (a guest) submitted RAW_BACKWARD once and opened the first hint of the failed
    check: a real grading, made once per run; tests copy the instance folder so each starts from it.

    The first fixture of the run's first tutor test: while that grading runs, the model server (tutor_model) starts,
    if any test of the run asks it, so the two overlap instead of one waiting for the other."""
    folder = tmp_path_factory.mktemp("graded") / "instance"
    app = ready_app({"INSTANCE_PATH": str(folder), "SANDBOX": "local", "SECRET_KEY": "test", "TESTING": True,
                     "REQUEUE_ON_START": False, "WARM_POOL": 0})
    web = WebSession(app.test_client()).guest()
    submitted = web.api("POST", "/api/submissions", json={"exercise": f"{LESSON}/{STEP}", "code": RAW_BACKWARD})
    assert submitted.status_code == 202, submitted.get_data(as_text=True)
    if any("tutor_model" in item.fixturenames for item in request.session.items):
        request.getfixturevalue("tutor_model")  # loads while the submission grades
    row = wait_for(app, submitted.json["id"])
    assert row.status == "done" and not row.passed, row.result_json
    shown = web.api("POST", f"/api/submissions/{row.id}/hints", json={"check": "scaled-backward"})
    assert shown.status_code == 200 and len(shown.json["hints"]) == 1
    cookie = web.client.get_cookie("session")
    jobs.shutdown(app)
    app.extensions["academy.engine"].dispose()
    (folder.parent / "cookie").write_text(cookie.value)
    yield folder
