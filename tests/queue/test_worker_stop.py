"""A worker told to stop stops: the thread that hears RQ's worker commands never holds it back."""
from __future__ import annotations

import time

import pytest
from redis import Redis
from rq import Queue

from academy.runners.rq import GradingWorker
from tests.helpers import RedisServer

pytestmark = pytest.mark.redis


def test_unsubscribing_waits_at_most_one_read_of_the_command_thread(redis_server: RedisServer) -> None:
    connection = Redis.from_url(redis_server.url)
    worker = GradingWorker([Queue("grading", connection=connection)], connection=connection, name="stopping")
    worker.subscribe()
    # The race seen in 1 stop of 40, made certain: the thread hears an unsubscribe and goes back to read
    # while nothing is subscribed; with RQ's 60-s read, the worker's own unsubscribe then waited 60 s.
    worker.pubsub.unsubscribe()
    deadline = time.monotonic() + 10
    while worker.pubsub.subscribed:
        assert time.monotonic() < deadline, "the unsubscribe was never confirmed"
        time.sleep(0.05)
    time.sleep(0.3)  # the thread is back in its read
    started = time.monotonic()
    worker.unsubscribe()
    assert time.monotonic() - started < 3, "the worker waited out its command thread's read"
    assert not worker.pubsub_thread.is_alive()
    connection.close()
