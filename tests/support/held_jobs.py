"""The long-poll's tests (tests/web/test_waiting.py, tests/web/test_long_poll_seats.py; the fixture `hold` in
tests/web/conftest.py): the runner's grading job replaced by one the test ends when it decides, and a GET that
waits in its own thread."""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from academy import jobs
from academy.data.db import get_session
from academy.data.models import JobStatus, Submission, utcnow
from academy.jobs import JobKind

if TYPE_CHECKING:
    from flask import Flask

    from tests.support.apps import WebSession

CODE = "def train_step(model, optimizer, scaler, loss_fn, x, y):\n    pass\n"


class HeldJobs:
    """The runner's grading job replaced by one that waits for `release`, then ends its row as `finish` says."""

    def __init__(self, app: Flask, finish: str = "announce") -> None:
        self.app, self.finish = app, finish
        self.release = threading.Event()
        self.started = threading.Event()
        app.extensions["academy.jobs"].handlers[JobKind.GRADE_SUBMISSION] = self.run

    def run(self, object_id: int) -> None:
        db = get_session()
        db.get(Submission, object_id).status = JobStatus.RUNNING
        db.commit()
        self.started.set()
        self.release.wait(60)
        if self.finish == "announce":  # the one way a job ends a row as the platform's failure: it announces
            jobs.mark_failed(JobKind.GRADE_SUBMISSION, object_id, "ended by the test")
        else:  # "quietly": as another process would, without news reaching this one
            db = get_session()
            row = db.get(Submission, object_id)
            row.status, row.error_message, row.finished_at = JobStatus.ERROR, "ended by the test", utcnow()
            db.commit()


def get_in_thread(learner: WebSession, path: str, answers: list[Any]) -> threading.Thread:
    """GET `path` as `learner` in a new thread; its (status code, body, seconds) is appended to `answers`."""
    def get() -> None:
        started = time.monotonic()
        response = learner.api("GET", path)
        answers.append((response.status_code, response.json, time.monotonic() - started))
    thread = threading.Thread(target=get)
    thread.start()
    return thread
