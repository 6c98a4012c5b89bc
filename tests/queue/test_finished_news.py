"""With REDIS_URL the news that a row finished travels through Redis (academy/jobs/waiting.py): a worker process
announces, and a web process's waiting request wakes at once, without waiting for its next read of the row."""
from __future__ import annotations

import threading
import time

from academy import jobs
from academy.jobs import waiting
from tests.support.apps import ready_app


def test_a_workers_news_wakes_a_web_processs_waiter(tmp_path, redis_server, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(waiting, "RECHECK_S", 60.0)  # only the news can end the wait early
    config = {"SANDBOX": "local", "SECRET_KEY": "test", "TESTING": True, "REDIS_URL": redis_server.url}
    web = ready_app({**config, "INSTANCE_PATH": str(tmp_path / "web")})
    worker = ready_app({**config, "INSTANCE_PATH": str(tmp_path / "worker")})
    finished = threading.Event()
    reads: list[float] = []

    def read() -> bool:
        reads.append(time.monotonic())
        return finished.is_set()

    answers: list[tuple[bool, float]] = []

    def wait() -> None:
        started = time.monotonic()
        answers.append((waiting.finishes(web).wait(read, bool, 30), time.monotonic() - started))
    thread = threading.Thread(target=wait)
    thread.start()
    deadline = time.monotonic() + 10
    while not waiting.finishes(web).waiting_now and time.monotonic() < deadline:
        time.sleep(0.01)
    finished.set()
    while thread.is_alive() and time.monotonic() < deadline + 20:
        waiting.finishes(worker).announce(7)  # a worker's job stored row 7 (published again until heard)
        thread.join(1)
    for app in (web, worker):
        jobs.shutdown(app)
    assert answers and answers[0][0] is True, answers
    assert answers[0][1] < 25, f"the wait ended after {answers[0][1]:.1f} s: it ran out, the news never came"
