"""The RQ grading worker's process (`python -m academy worker`): `run_worker`, its `GradingWorker` (a job's time limit
and a trusted job only, the recovery's maintenance pass) and how a job past its limit is stopped."""
from __future__ import annotations

import logging
import os
import socket
from typing import Any

import click
from flask import Flask
from rq import Queue, SimpleWorker
from rq.exceptions import StopRequested
from rq.job import Job
from rq.serializers import JSONSerializer
from rq.timeouts import JobTimeoutException, UnixSignalDeathPenalty
from rq.worker import WorkerStatus

from academy import jobs
from academy.data.db import check_schema
from academy.runners import rq as queue_runner
from academy.runners.rq import RECOVERY_LOCK, AcademyJob, GradingTimeout, RQRunner, runner_of, untrusted
from academy.settings import InstanceNotReady

log = logging.getLogger("academy.runners.rq")  # its lines are the queue's, as before




class GradingDeathPenalty(UnixSignalDeathPenalty):
    """RQ's SIGALRM job timeout, raising GradingTimeout instead of RQ's JobTimeoutException."""

    def __init__(self, timeout: Any, exception: Any = JobTimeoutException, **kwargs: Any):
        super().__init__(timeout, GradingTimeout if exception is JobTimeoutException else exception, **kwargs)


class GradingWorker(SimpleWorker):
    """An RQ SimpleWorker (jobs run in this process, next to its app and warm pool) that also recovers
    lost jobs on every maintenance pass."""

    death_penalty_class = GradingDeathPenalty
    runner: RQRunner
    app: Flask
    # How long the thread that hears RQ's worker commands waits in one read. RQ waits 60 s; redis-py 8's
    # PubSubWorkerThread.stop() joins that thread without a timeout, and a thread that re-entered its read
    # after the unsubscribe waits out the whole read: a worker told to stop then hung at "unsubscribing"
    # (1 stop in 40 here; 3 workers SIGKILLed after 30 s in one test run). A command still arrives at once.
    pubsub_read_s = 1.0

    def subscribe(self) -> None:
        """RQ's subscribe, with a read of `pubsub_read_s`."""
        self.log.info("Worker %s: subscribing to channel %s", self.name, self.pubsub_channel_name)
        self.pubsub = self.connection.pubsub()
        self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
        self.pubsub_thread = self.pubsub.run_in_thread(
            sleep_time=self.pubsub_read_s, daemon=True, exception_handler=self._pubsub_exception_handler)

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        # How long after its start a job of a dead worker counts as abandoned (RQ's default grace is 60 s).
        if job.timeout is None or job.timeout < 0:
            return super().get_heartbeat_ttl(job, working_time)
        return int(job.timeout) + self.runner.settings.heartbeat_grace_s

    def execute_job(self, job: Job, queue: Queue) -> None:
        reason = untrusted(job)
        if reason is not None:
            # Not run, not failed (a failure would run its callbacks): deleted, and said so in the log.
            log.error("refused job %s from Redis: %s; deleted without running it", job.id, reason)
            job.delete()
            self.set_state(WorkerStatus.IDLE)
            return
        super().execute_job(job, queue)

    def run_maintenance_tasks(self) -> None:
        super().run_maintenance_tasks()  # RQ: abandoned jobs are retried or failed here
        # One worker at a time; the lock expires before the next pass of any worker.
        if self.connection.set(RECOVERY_LOCK, self.name, nx=True, ex=max(1, self.runner.settings.queue_sweep_s - 1)):
            try:
                self.runner.recover()
            except StopRequested:
                # An idle worker's SIGTERM handler raises this wherever the main thread is, this pass's query
                # included: it must reach RQ's loop. Swallowed, the worker ignored the stop until SIGKILL
                # (3 test workers waited out their 30 s in one run; an operator's `docker stop` alike).
                raise
            except Exception:  # noqa: BLE001 - a database hiccup must not stop the worker; next pass retries
                log.exception("recovery pass failed")


def run_worker(app: Flask, *, burst: bool = False, name: str | None = None, pool_size: int | None = None) -> None:
    """Consume the grading queue until stopped (SIGTERM/Ctrl-C finish the current job first)."""
    from sandbox import SandboxError
    from sandbox.docker import host_has_gpu

    runner = runner_of(app)
    queue_runner._worker_app = app  # perform's app (rq.py: worker_app)
    queue_settings = runner.settings
    if pool_size is not None:
        app.extensions["academy.sandbox"] = jobs.GradingSandbox(app, warm=pool_size)
    sandbox = jobs.grading_sandbox(app)
    try:
        where = sandbox.describe()  # refuse before taking a job when nothing here can grade it
    except SandboxError as exc:
        raise click.ClickException(f"this worker cannot grade: {exc}") from None
    try:  # a host that cannot grade is the more basic fault, so it is said first (above)
        check_schema(app)
    except InstanceNotReady as exc:
        raise click.ClickException(str(exc)) from None
    try:
        worker = GradingWorker(
            [runner.queue], connection=runner.connection, name=name or f"{socket.gethostname()}.{os.getpid()}",
            job_class=AcademyJob, serializer=JSONSerializer,
            maintenance_interval=queue_settings.queue_sweep_s,
            # An idle worker wakes from its blocking dequeue every worker_ttl - 15 s: once per sweep.
            worker_ttl=queue_settings.queue_sweep_s + 15)
        worker.runner, worker.app = runner, app
        where_from = redacted(queue_settings.redis_url or "")
        click.echo(f"worker {worker.name}: queue '{queue_settings.queue}' on {where_from}, "
                   f"{where} sandbox, {'GPU host' if host_has_gpu() else 'no GPU'}", err=True)
        worker.work(burst=burst, logging_level=queue_settings.worker_log)
    finally:
        sandbox.close()


def redacted(url: str) -> str:
    """The Redis URL without its password, for logs."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@")
    return url
