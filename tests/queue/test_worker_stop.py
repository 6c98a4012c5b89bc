"""A worker told to stop stops: the thread that hears RQ's worker commands never holds it back."""
from __future__ import annotations

import signal
import time
from types import SimpleNamespace

import pytest
from redis import Redis
from rq import Queue
from rq.exceptions import StopRequested

from academy.runners.worker import GradingWorker
from tests.support.queues import RedisServer

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


def test_a_stop_during_the_recovery_pass_stops_the_worker(redis_server: RedisServer) -> None:
    """An idle worker's SIGTERM handler raises StopRequested wherever the main thread is. In the recovery
    pass (a database query, every sweep) the pass's own `except Exception` swallowed it, and the worker ran
    on until SIGKILL: three test workers waited out 30 s each in one run. The signal, delivered there."""
    connection = Redis.from_url(redis_server.url)
    worker = GradingWorker([Queue("grading", connection=connection)], connection=connection, name="recovering")
    recovered: list[bool] = []

    def recover() -> None:  # the recovery pass, interrupted by an operator's `docker stop`
        signal.raise_signal(signal.SIGTERM)
        recovered.append(True)  # never reached: the handler raised

    worker.runner = SimpleNamespace(recover=recover, settings=SimpleNamespace(queue_sweep_s=2))
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    worker._install_signal_handlers()  # what worker.work() does first
    try:
        with pytest.raises(StopRequested):
            worker.run_maintenance_tasks()
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        connection.close()
    assert recovered == []
