"""Waiting for a submission or Run to finish: the API's long-poll (`GET /api/submissions/<id>?wait=S`).

The job that stores a finished row calls `announce(id)` (academy/jobs/: the verdict stored, or the row
marked failed). A request waiting on that row wakes at once when the job ran in this process (the thread
runner), or when Redis brings the news from an RQ worker (one pub/sub channel per queue); in any case it
reads the row again every `RECHECK_S`, so a row finished by another web process, or news lost on the way,
costs at most that. Between reads the request holds no database connection.

A waiting request holds one of the server's threads (gunicorn's `--threads`), so at most `long_poll_waiters`
requests of one process wait at once; the others are answered at once, and the browser then polls
(static/lesson.js: an answer that came back quickly, still pending, is followed by a pause). One learner holds
at most one seat, and one client address at most half of them (`per_address`): guests made in bulk from one
address, or one classroom behind a NAT, leave the other half to everyone else.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from flask import Flask, current_app

from academy.logline import printable
from academy.settings import settings

if TYPE_CHECKING:
    from redis import Redis

log = logging.getLogger("academy.jobs.waiting")  # the name it has always logged under

RECHECK_S = 1.0  # how often a waiting request reads its row again, news or not
Row = TypeVar("Row")


class Finishes:
    """This process's news of finished rows, and the requests that wait for it."""

    def __init__(self, app: Flask):
        own = settings(app)
        self.redis_url, self.channel = own.redis_url, f"academy:{own.queue}:finished"
        self.max_wait_s, self.seats = own.long_poll_s, own.long_poll_waiters  # 0 seats: never wait
        self._news = threading.Condition()
        self._count = 0  # rows announced so far: a waiter wakes when it moves
        self._who: set[str] = set()  # the learners whose requests wait now, one request each
        self._where: Counter[str] = Counter()  # how many requests wait now, by client address
        self.per_address = max(1, self.seats // 2)  # the seats one address may hold
        self._listener: threading.Thread | None = None
        self._closed = threading.Event()  # set by close(): the listener ends within a second
        self._publisher: Any = None  # a Redis client, made on first use

    @property
    def waiting_now(self) -> int:
        return len(self._who)

    def announce(self, object_id: int) -> None:
        """A submission or Run `object_id` has finished (its row is committed)."""
        self._heard()
        if self.redis_url:  # the web processes hear it through Redis (a worker's own waiters have none)
            try:
                if self._publisher is None:
                    self._publisher = connect(self.redis_url)
                self._publisher.publish(self.channel, str(object_id))
            except Exception:  # noqa: BLE001 - the waiters read their rows again within RECHECK_S anyway
                log.warning("could not publish that row %s finished", object_id, exc_info=True)

    def _heard(self) -> None:
        with self._news:
            self._count += 1
            self._news.notify_all()

    def wait(self, read: Callable[[], Row], done: Callable[[Row], bool], seconds: float, who: str = "",
             address: str = "") -> Row:
        """`read()` until `done` of it, for at most `seconds` (capped at `long_poll_s`); the last read.
        Without a free seat, asked for 0 s, while `who` (a learner) already waits in another request, or while
        `address` (the client's) holds `per_address` seats, one read and no wait: one learner holds at most one
        seat, and one address at most half of them, whatever they send."""
        seconds = min(max(seconds, 0.0), self.max_wait_s)
        row = read()
        if done(row) or seconds <= 0:
            return row
        with self._news:
            if who in self._who or len(self._who) >= self.seats or self._where[address] >= self.per_address:
                return row
            self._who.add(who)
            self._where[address] += 1
        try:
            self._listen()
            end = time.monotonic() + seconds
            while True:
                with self._news:
                    seen = self._count  # before the read: news of a row finished after it is not missed
                row = read()
                left = end - time.monotonic()
                if done(row) or left <= 0:
                    return row
                with self._news:
                    self._news.wait_for(lambda: self._count != seen, timeout=min(left, RECHECK_S))
        finally:
            with self._news:
                self._who.discard(who)
                self._where[address] -= 1
                if not self._where[address]:
                    del self._where[address]

    def _listen(self) -> None:
        """With Redis: one thread per process hears the workers' news (started by the first waiter)."""
        if not self.redis_url or self._listener is not None:
            return
        with self._news:
            if self._listener is None:
                self._listener = threading.Thread(target=self._hear_redis, name="academy-finishes", daemon=True)
                self._listener.start()

    def close(self) -> None:
        """Stop listening and publishing (the app is done: tests, benchmarks, a server's last step)."""
        self._closed.set()
        if self._listener is not None:
            self._listener.join(5)
        if self._publisher is not None:
            self._publisher.close()

    def _hear_redis(self) -> None:
        from redis import Redis

        url = self.redis_url
        if not url:  # started only where there is one (listen)
            return
        lost = False
        while not self._closed.is_set():
            try:
                # Its own connection without a read timeout: a quiet channel is not an error.
                client = Redis.from_url(url, socket_connect_timeout=3, health_check_interval=30)
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(self.channel)
                if lost:
                    log.warning("hearing the news of finished rows from Redis again")
                    lost = False
                try:
                    while not self._closed.is_set():
                        if pubsub.get_message(timeout=1) is not None:
                            self._heard()
                finally:
                    pubsub.close()
                    client.close()
            except Exception as error:  # noqa: BLE001 - Redis away: the waiters read their rows every RECHECK_S
                # One line per outage, no traceback: the cause is the error's text, and a traceback every 5 s
                # for as long as Redis is away buries the log.
                if not lost:
                    log.warning("lost the news of finished rows from Redis (%s); listening again every 5 s",
                                printable(str(error)))
                lost = True
                self._closed.wait(5)


def connect(url: str) -> Redis:
    """A Redis client (redis is imported only when one is wanted)."""
    from redis import Redis

    # Short timeouts: a web request must not hang when Redis is away (the row is safe in the database).
    return Redis.from_url(url, socket_connect_timeout=3, socket_timeout=10, health_check_interval=30)


def finishes(app: Flask | None = None) -> Finishes:
    found: Finishes = (app or current_app).extensions["academy.finishes"]
    return found


def announce(object_id: int) -> None:
    finishes().announce(object_id)


def init_app(app: Flask) -> None:
    app.extensions["academy.finishes"] = Finishes(app)
