"""Who runs the background jobs of academy/jobs.py: one small interface, two runners.

    threads   ThreadRunner (threads.py): a thread pool in the web process, the embedded default
    rq        RQRunner (rq.py): jobs on Redis, graded by `python -m academy worker` processes (REDIS_URL)

Both take jobs in turns per fair key (an account, the guests of one client address, the instructors'
jobs), so one client's flood holds one grader at most and everyone else's next job is one turn away.
"""
from __future__ import annotations

import logging
from typing import Callable, Protocol

import click
from flask import Flask, current_app

from academy.settings import settings

log = logging.getLogger(__name__)


class JobRunner(Protocol):
    runs_here: bool  # True when the jobs run in this process (they end when it ends)

    def submit(self, job: Callable[[int], None], object_id: int, key: str) -> None:
        """Run `job(object_id)` later, in an app context, in `key`'s turn. Never raises for a queue that is
        away: the row is already stored, and recovery finds it."""

    def recover(self) -> dict[str, int]:
        """Give every unfinished row (academy.jobs.unfinished) a live job; counts of what it did."""

    def shutdown(self) -> None:
        """Finish what this process runs (threads) and let go of connections."""


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
    """The app's runner: RQ when REDIS_URL is set, else threads."""
    app.extensions["academy.jobs"] = RUNNERS[runner_name(app)](app)


def recover_on_start(app: Flask) -> None:
    """Unfinished jobs get a live job again when a serving process starts (gunicorn, `flask run`).

    Not when a CLI command such as `create-user` makes the app: with the thread runner it would take the
    running server's jobs onto its own threads, which end with the command. RQ workers recover on their
    own maintenance pass.
    """
    command = click.get_current_context(silent=True)
    if command is not None and command.command.name != "run":
        return
    try:
        counts = runner(app).recover()
    except Exception:  # noqa: BLE001 - e.g. Redis away: the app must still start; workers recover later
        log.exception("recovering unfinished jobs at start failed")
        return
    if any(counts.values()):
        log.warning("recovery at start: %s", ", ".join(f"{n} {what}" for what, n in counts.items()))
