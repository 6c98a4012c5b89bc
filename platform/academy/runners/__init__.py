"""Who runs the background jobs of academy/jobs/: one small interface, two runners.

    threads   ThreadRunner (threads.py): a thread pool in the web process, the embedded default
    rq        RQRunner (rq.py): jobs on Redis, graded by `python -m academy worker` processes (REDIS_URL)

Both take jobs in turns per fair key (an account, the guests of one client address, the instructors'
jobs), so one client's flood holds one grader at most and everyone else's next job is one turn away.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable

from flask import Flask, current_app

from academy import jobs
from academy.jobs import JobRunner  # noqa: F401 - what a runner offers is the jobs' to say
from academy.settings import InstanceNotReady, settings

log = logging.getLogger("academy.runners")


def _make_threads(app: Flask) -> JobRunner:
    from academy.runners.threads import ThreadRunner

    return ThreadRunner(app, settings(app).grading_workers)


def _make_rq(app: Flask) -> JobRunner:
    from academy.runners.rq import RQRunner  # imports rq and redis only when they are wanted

    return RQRunner(app)


RUNNERS: dict[str, Callable[[Flask], JobRunner]] = {"threads": _make_threads, "rq": _make_rq}


def runner_name(app: Flask) -> str:
    return "rq" if settings(app).redis_url else "threads"


def runner(app: Flask | None = None) -> JobRunner:
    return (app or current_app).extensions["academy.jobs"]


def init_app(app: Flask) -> None:
    """The app's runner: RQ when REDIS_URL is set, else threads; and its recovery on the first request."""
    app.extensions["academy.jobs"] = RUNNERS[runner_name(app)](app)
    if settings(app).requeue_on_start:
        app.extensions["academy.first_request"] = first = FirstRequestRecovery(app)
        app.before_request(first)


class FirstRequestRecovery:
    """Unfinished jobs get a live job again when a serving process (gunicorn, `flask run`) takes its first
    request (or earlier: start_serving): by then it is the process that serves, so the thread runner's jobs
    run on threads that live as long as the server. Not when the app is made: an administrator's command
    (`create-user`) makes the app too, and would take the running server's jobs onto threads that end with
    the command. RQ workers also recover on their own maintenance pass. Only one request runs it; the
    others do not wait for it."""

    def __init__(self, app: Flask):
        self.app = app
        self.done = False
        self._lock = threading.Lock()

    def __call__(self) -> None:
        if self.done or not self._lock.acquire(blocking=False):
            return
        try:
            if not self.done:
                self.done = recover(self.app)
        finally:
            self._lock.release()


def start_serving(app: Flask) -> threading.Thread | None:
    """What a gunicorn worker does once it has loaded the app (academy/gunicorn_hooks.py), before any request:
    its grading sandbox starts warming in the background when its jobs run here (a warm pool takes seconds to
    start, and the first Run should not wait for it), and the recovery runs now rather than on the first
    request. The warming thread, or None."""
    warming = None
    if runner(app).runs_here:
        # warm_up(), not get(): a sandbox that cannot be made here is each job's own error, as before.
        warming = threading.Thread(target=jobs.grading_sandbox(app).warm_up, name="academy-warm-sandbox", daemon=True)
        warming.start()
    first = app.extensions.get("academy.first_request")
    if first is not None:
        first()
    return warming


def recover(app: Flask) -> bool:
    """Run the runner's recovery and log what it did; False when the database is not ready yet (try again)."""
    try:
        counts = runner(app).recover()
    except InstanceNotReady:
        return False  # the request itself answers 503 and says why; after `init-db` the next one recovers
    except Exception:  # noqa: BLE001 - e.g. Redis away: the app must still serve; workers recover later
        log.exception("recovering unfinished jobs at start failed")
        return True
    if any(counts.values()):
        log.warning("recovery at start: %s", ", ".join(f"{n} {what}" for what, n in counts.items()))
    return True
