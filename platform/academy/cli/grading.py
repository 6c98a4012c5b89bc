"""Grading: `regrade` (and `--wait`'s table) and `worker`, an RQ grading worker."""
from __future__ import annotations

import time
from typing import Any

import click
from flask import current_app
from flask.cli import with_appcontext

from academy.cli.base import needs_database
from academy.data.db import get_session
from academy.data.models import JobStatus, RegradeRun, utcnow


@click.command("regrade")
@click.argument("exercise")
@click.option("--wait", is_flag=True, help="Stay until the regrade is done and print every verdict, old and new.")
@with_appcontext  # also when invoked through app.cli directly (app.test_cli_runner), not only by `flask`
@needs_database
def regrade_command(exercise: str, wait: bool) -> None:
    """Grade the finished submissions of EXERCISE again with its current checks (e.g. after changing them).

    Exit status 1 when the run stopped or a submission could not be graded (with --wait).
    """
    from academy import jobs
    from academy.content import get_content
    from academy.runners import runner

    if exercise not in get_content().course.exercises:
        raise click.ClickException(f"There is no exercise '{exercise}'.")
    run, started = jobs.request_regrade(exercise)
    if started:
        click.echo(f"Regrading {run.total} finished submission(s) of {exercise} in the background (run {run.id}).")
    else:
        click.echo(f"A regrade of {exercise} is already {run.status} (run {run.id}, {run.total} submission(s)); "
                   "not starting another.")
    if not wait:
        click.echo(f"See the outcome on /instructor/exercises/{exercise}, or wait for it: "
                   f"flask --app academy regrade {exercise} --wait")
        if runner().runs_here:
            # Without REDIS_URL the jobs run on this process's threads, which it finishes before exiting.
            click.echo("No job queue is configured (REDIS_URL), so this command grades them itself and "
                       "returns when they are done.")
        return
    run = wait_for_regrade(run.id)
    click.echo(regrade_table(run))
    if run.status == JobStatus.ERROR or run.failed:
        raise click.exceptions.Exit(1)


def wait_for_regrade(run_id: int, poll_s: float = 0.5) -> RegradeRun:
    """Poll the run until it is done or ended in error (Ctrl-C stops waiting, not the regrade)."""
    from academy import jobs

    db = get_session()
    while True:
        db.rollback()  # end the read transaction: SQLite would keep showing the snapshot it started with
        run = db.get(RegradeRun, run_id, populate_existing=True)  # the row, not the session's stale copy
        if not run.busy:
            return run
        if run.updated_at < utcnow() - jobs.REGRADE_STALE_AFTER:  # nothing is working on it: do not wait forever
            raise click.ClickException(f"Regrade run {run.id} is {run.status} but has not moved since "
                                       f"{run.updated_at:%Y-%m-%d %H:%M:%S} UTC; is a worker running?")
        time.sleep(poll_s)


def _verdict_text(verdict: dict[str, Any] | None) -> str:
    return f"{verdict['status']} {verdict['score'] * 100:.0f}%" if verdict else "not graded"


def regrade_table(run: RegradeRun) -> str:
    """The summary of a finished run: a row per submission, the failures, then the counts."""
    rows = [("submission", "learner", "old", "new", "changed")]
    rows += [(str(e["submission"]), e["learner"], _verdict_text(e["old"]), _verdict_text(e["new"]),
              "yes" if e["changed"] else "no") for e in run.entries]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines += [f"submission {e['submission']} not graded: {e['error']}" for e in run.entries if e["error"]]
    if run.error_message:
        lines.append(f"The regrade ended in error: {run.error_message}")
    lines.append(f"{run.regraded} regraded: {run.changed} changed, {run.unchanged} unchanged, "
                 f"{run.failed} failed to grade (run {run.id}, {run.status})")
    return "\n".join(lines)


@click.command("worker")
@click.option("--burst", is_flag=True, help="Quit when the queue is empty (for scripts and tests).")
@click.option("--name", help="Worker name shown by `rq info` (default HOST.PID).")
@click.option("--pool", "pool_size", type=int, help="Warm grading processes (default DLA_WARM_POOL or 2; 0 = cold).")
@with_appcontext
def worker_command(burst: bool, name: str | None, pool_size: int | None) -> None:
    """Grade queued submissions from Redis (REDIS_URL) with the best sandbox of this host.

    It says first whether this host can grade at all, then whether the database is ready (run_worker)."""
    from academy.runners.worker import run_worker  # imports rq and redis only when they are wanted

    run_worker(current_app._get_current_object(), burst=burst, name=name, pool_size=pool_size)  # type: ignore[attr-defined]
