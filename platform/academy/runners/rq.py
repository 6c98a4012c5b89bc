"""The RQ runner: when REDIS_URL is set, jobs go to Redis instead of the web process's threads.

    REDIS_URL=redis://host:6379/0 python -m academy worker     # one worker; start as many as you like

A web request stores the submission as "queued", then `RQRunner.submit` enqueues `perform("grade_submission",
id, fair_key)` (the first argument a JobKind's value, academy/jobs/) under the job id "submission-ID",
when it is that key's turn (see "Turns" below). Any number of workers on any number of hosts consume the
queue; each grades with the best sandbox it has (docker with a warm pool, on the GPU when there is one).

Nothing is lost, using RQ's own machinery:
- a job running past DLA_JOB_TIMEOUT is stopped and run once more (RQ `Retry`), then its failure
  callback stores status "error" with a plain message (grader failures the job stores itself);
- a worker killed mid-job leaves its job in RQ's StartedJobRegistry; once the job's heartbeat expires the
  registry cleanup of any live worker retries it once (RQ `Retry`) and then fails it (same callback);
- Redis restarted empty, or unreachable when the web app enqueued: every worker's maintenance pass
  (`RQRunner.recover`, on start and every DLA_QUEUE_SWEEP_S) re-enqueues stored rows that are still
  queued/running but have no live job. Job ids are unique (RQ `unique=True`), so enqueueing twice is harmless.

Workers are RQ SimpleWorkers: the job runs in the worker process itself, so the Flask app and the warm
container pool are made once per worker process, not per job.

Turns: each fair key (an account, the guests of one client address, the instructors' jobs) has at most one
job on the RQ queue or running; its other jobs wait in a Redis list of their own, and when its job
finishes the next one goes to the back of the queue. One client's flood then holds one worker at most
and everyone else's next job is at most one turn away, as with the in-process runner (threads.py).

Trust: Redis is reachable only by web and workers (with a password in the compose stack), and still the
worker trusts nothing it reads there: jobs are JSON (RQ's JSONSerializer, never pickle, on both sides),
and a job that names anything but `perform` with (kind, id, key), or a callback other than
`on_job_failure`, is deleted unrun (`AcademyJob`, `GradingWorker.execute_job`).
"""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import click
from flask import Flask
from redis import Redis
from redis.exceptions import RedisError
from rq import Callback, Queue, Retry
from rq.exceptions import AbandonedJobError, DeserializationError, DuplicateJobError, NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from rq.timeouts import JobTimeoutException

from academy import jobs
from academy.data.models import utcnow
from academy.jobs import JOBS, JobKind, connect
from academy.settings import Settings, settings

log = logging.getLogger("academy.runners.rq")

LIVE_STATES = {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.SCHEDULED, JobStatus.DEFERRED,
               JobStatus.CREATED, JobStatus.READY_TO_ENQUEUE}
RECOVERY_LOCK = "academy:recovery-lock"

# Whose turn is it: take the key's turn when it is free (1), or join the key's waiting list (0).
# KEYS: the holders hash, the key's waiting list; ARGV: fair key, member ("kind:id").
_ADMIT = """
local holder = redis.call('HGET', KEYS[1], ARGV[1])
if not holder then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) return 1 end
if holder == ARGV[2] then return 2 end
if not redis.call('LPOS', KEYS[2], ARGV[2]) then redis.call('RPUSH', KEYS[2], ARGV[2]) end
return 0
"""
# The member's job ended: hand the key's turn to its next waiting member (returned), or free it.
_RELEASE = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return false end
local next_member = redis.call('LPOP', KEYS[2])
if next_member then redis.call('HSET', KEYS[1], ARGV[1], next_member) return next_member end
redis.call('HDEL', KEYS[1], ARGV[1])
return false
"""


def job_id(kind: JobKind, object_id: int) -> str:
    """The RQ job id of one row's job ("submission-12"): one live job per row (RQ `unique=True`)."""
    return f"{JOBS[kind].id_prefix}-{object_id}"


PERFORM = "academy.runners.rq.perform"
FAILURE_CALLBACK = "academy.runners.rq.on_job_failure"


class UntrustedJob(Exception):
    """A job in Redis that this project did not make: it is never called."""


def untrusted(job: Job) -> str | None:
    """Why `job` is not one of ours, or None: perform(kind, id, key) with our failure callback only.

    Read from the job's JSON (RQ's JSONSerializer: decoding it runs nothing), before anything is
    imported or called.
    """
    try:
        func_name, instance, args, kwargs = job.func_name, job.instance, job.args, job.kwargs
    except DeserializationError:
        return "its payload is not JSON"
    if func_name != PERFORM or instance is not None or kwargs:
        return f"it calls {func_name!r}"
    if not (isinstance(args, (list, tuple)) and len(args) == 3 and args[0] in JOBS
            and type(args[1]) is int and isinstance(args[2], str)):
        return "its arguments are not (job kind, id, fair key)"
    callbacks = {job._success_callback_name, job._stopped_callback_name, job._failure_callback_name} - {None, ""}
    if callbacks - {FAILURE_CALLBACK}:
        return f"it names callbacks {sorted(callbacks)}"
    if job.webhooks or job._dependency_ids:
        return "it asks for webhooks or dependencies"
    return None


class AcademyJob(Job):
    """RQ's Job, resolving only our own function and callback: wherever RQ would import a name it read
    from Redis (running the job, or a failure callback in a registry cleanup), anything else raises."""

    @property
    def func(self) -> Any:
        if self.func_name != PERFORM:
            raise UntrustedJob(f"job {self.id} calls {self.func_name!r}, which is not this project's")
        return perform

    @property
    def failure_callback(self) -> Any:
        if self._failure_callback_name not in (None, "", FAILURE_CALLBACK):
            raise UntrustedJob(f"job {self.id} names the callback {self._failure_callback_name!r}")
        return on_job_failure if self._failure_callback_name else None

    @property
    def success_callback(self) -> Any:
        if self._success_callback_name:
            raise UntrustedJob(f"job {self.id} names the callback {self._success_callback_name!r}")
        return None

    @property
    def stopped_callback(self) -> Any:
        if self._stopped_callback_name:
            raise UntrustedJob(f"job {self.id} names the callback {self._stopped_callback_name!r}")
        return None


def member(kind: JobKind, object_id: int) -> str:
    return f"{kind}:{object_id}"


def parse_member(value: str | bytes) -> tuple[JobKind, int]:
    kind, _, object_id = (value.decode() if isinstance(value, bytes) else value).partition(":")
    return JobKind(kind), int(object_id)


class RQRunner:
    """The JobRunner that puts jobs on an RQ queue instead of running them here."""

    runs_here = False

    def __init__(self, app: Flask):
        self.app = app
        self.settings: Settings = settings(app)
        self.connection = connect(self.settings.redis_url or "")
        self.queue = Queue(self.settings.queue, connection=self.connection, job_class=AcademyJob,
                           serializer=JSONSerializer)
        self.holders = f"academy:{self.settings.queue}:turns"
        self._admit = self.connection.register_script(_ADMIT)
        self._release = self.connection.register_script(_RELEASE)

    def waiting_list(self, key: str) -> str:
        return f"academy:{self.settings.queue}:waiting:{key}"

    def submit(self, kind: JobKind, object_id: int, key: str = "unkeyed") -> None:
        """Enqueue the job of `kind` on `object_id` in `key`'s turn, unless a live job for that object exists
        already.

        Never raises for Redis trouble: the row is already committed as queued, and a worker's
        recovery pass enqueues it once Redis answers again.
        """
        try:
            self.take_turn(kind, object_id, key)
        except RedisError as exc:
            log.warning("Redis unreachable (%s): %s %s stays queued in the database until a worker "
                        "recovers it", exc, kind, object_id)

    def take_turn(self, kind: JobKind, object_id: int, key: str) -> bool:
        """Enqueue the job now if `key` has no job on the queue, else add it to the key's waiting list.
        True when it was enqueued."""
        if kind not in JOBS:
            raise ValueError(f"unknown job kind {kind!r}")
        if self._admit(keys=[self.holders, self.waiting_list(key)], args=[key, member(kind, object_id)]):
            return self.enqueue(kind, object_id, key)
        return False

    def end_turn(self, key: str, kind: JobKind, object_id: int) -> None:
        """The job of `key` ended: its next waiting job (if any) goes to the back of the queue."""
        following = self._release(keys=[self.holders, self.waiting_list(key)], args=[key, member(kind, object_id)])
        if following is not None:
            self.enqueue(*parse_member(following), key)

    def holder(self, key: str) -> str | None:
        value = self.connection.hget(self.holders, key)
        return value.decode() if value is not None else None

    def is_waiting(self, key: str, kind: JobKind, object_id: int) -> bool:
        return self.connection.lpos(self.waiting_list(key), member(kind, object_id)) is not None

    def enqueue(self, kind: JobKind, object_id: int, key: str = "unkeyed") -> bool:
        """Put one job on the queue; False when a live job for it was already there."""
        if kind not in JOBS:
            raise ValueError(f"unknown job kind {kind!r}")
        ident = job_id(kind, object_id)
        for _attempt in range(2):
            try:
                self.queue.enqueue(
                    perform, kind, object_id, key, job_id=ident, unique=True,
                    job_timeout=JOBS[kind].timeout(self.settings),
                    retry=Retry(max=self.settings.job_retries) if self.settings.job_retries > 0 else None,
                    on_failure=Callback(on_job_failure), meta={"retries": self.settings.job_retries},
                    result_ttl=0,  # the verdict lives in the database
                    failure_ttl=7 * 24 * 3600,  # failed jobs stay inspectable (`rq info`) for a week
                    description=f"{kind}({object_id})")
                return True
            except DuplicateJobError:
                # The id is taken: by a live job (nothing to do) or by a finished/failed one from an
                # earlier round whose row went back to queued (drop it and enqueue afresh).
                try:
                    old = AcademyJob.fetch(ident, connection=self.connection, serializer=JSONSerializer)
                except NoSuchJobError:
                    continue
                if old.get_status() in LIVE_STATES:
                    return False
                old.delete()
        return False

    def job_status(self, kind: JobKind, object_id: int) -> JobStatus | None:
        try:
            return AcademyJob.fetch(job_id(kind, object_id), connection=self.connection,
                                    serializer=JSONSerializer).get_status()
        except NoSuchJobError:
            return None


    def shutdown(self) -> None:
        self.connection.close()

    def recover(self) -> dict[str, int]:
        """Give every unfinished row a live job: re-enqueue the ones Redis lost, fail the ones RQ failed.

        Rows younger than recover_after_s are skipped: their web request may be about to enqueue them.
        """
        counts = {"requeued": 0, "failed": 0}
        cutoff = utcnow() - timedelta(seconds=self.settings.recover_after_s)
        with self.app.app_context():
            rows = jobs.unfinished()
            for row in rows:
                if row.created_at > cutoff:
                    continue  # its web request may be about to enqueue it
                kind, object_id, key = row.kind, row.object_id, row.key
                status = self.job_status(kind, object_id)
                if status in LIVE_STATES:
                    continue
                if status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
                    # RQ gave up on it but the callback never stored that (e.g. it could not reach the database).
                    if jobs.mark_failed(kind, object_id,
                                        "Grading could not finish. Your code is saved: submit it again."):
                        counts["failed"] += 1
                    self.end_turn(key, kind, object_id)
                elif self.holder(key) == member(kind, object_id):
                    # It holds its key's turn but its job is gone (Redis lost it, or the turn was handed to it
                    # and the enqueue failed): enqueue it in that turn.
                    counts["requeued"] += int(self.enqueue(kind, object_id, key))
                elif not self.is_waiting(key, kind, object_id):
                    counts["requeued"] += int(self.take_turn(kind, object_id, key))
        # Turns held by jobs that ended without handing them on (a worker died between the two).
        unfinished = {member(row.kind, row.object_id) for row in rows}
        for key, holder in self.connection.hgetall(self.holders).items():
            kind, object_id = parse_member(holder)
            if holder.decode() not in unfinished and self.job_status(kind, object_id) not in LIVE_STATES:
                self.end_turn(key.decode(), kind, object_id)
        if any(counts.values()):
            log.warning("recovery: %(requeued)d unfinished job(s) re-enqueued, %(failed)d finished as error", counts)
        return counts


# -- the worker side -------------------------------------------------------------------------------

_worker_app: Flask | None = None  # the app of this worker process, set by run_worker before any job


def worker_app() -> Flask:
    if _worker_app is None:
        raise RuntimeError("RQ jobs of this project run only in `python -m academy worker`")
    return _worker_app


def perform(kind: str, object_id: int, key: str) -> None:
    """The RQ job: run the job of `kind` (academy.jobs.JOBS) on `object_id` inside the worker's app context,
    then hand `key`'s turn on (a job that raises is retried in the same turn; its failure callback ends the
    turn). `kind` is a JobKind's value, as the job's JSON in Redis carries it."""
    if kind not in JOBS:
        raise ValueError(f"unknown job kind {kind!r}")
    app = worker_app()
    with app.app_context():
        JOBS[JobKind(kind)].run(object_id)
    _end_turn(app, key, JobKind(kind), object_id)


def _end_turn(app: Flask, key: str, kind: JobKind, object_id: int) -> None:
    try:
        runner_of(app).end_turn(key, kind, object_id)
    except RedisError:  # the recovery pass hands the turn on once Redis answers
        log.exception("could not hand on the turn of %s after %s %s", key, kind, object_id)


def failure_message(exc_type: type[BaseException] | None, job: Job) -> str:
    if exc_type is not None and issubclass(exc_type, AbandonedJobError):
        tries = 1 + int(job.meta.get("retries", 0))  # the callback only sees a job's last failure
        return (f"Grading stopped because the grading machine went away ({tries} "
                f"{'try' if tries == 1 else 'tries'}). Your code is saved: submit it again.")
    if exc_type is not None and issubclass(exc_type, (GradingTimeout, JobTimeoutException)):
        return (f"Grading took longer than {job.timeout} s and was stopped. Your code is saved: "
                f"submit it again.")
    name = exc_type.__name__ if exc_type else "unknown error"
    return f"The grader failed ({name}). Your code is saved; try again later."


def on_job_failure(job: Job, connection: Redis, exc_type: Any, exc_value: Any, traceback: Any) -> None:
    """RQ failure callback: the last failure of a job ends its row as "error" (earlier ones are retried)."""
    if job.retries_left:
        return  # RQ puts it back on the queue
    kind, object_id, key = job.args
    app = worker_app()
    with app.app_context():
        jobs.mark_failed(JobKind(kind), object_id, failure_message(exc_type, job))
    _end_turn(app, key, JobKind(kind), object_id)


def runner_of(app: Flask) -> RQRunner:
    runner = app.extensions["academy.jobs"]
    if not isinstance(runner, RQRunner):
        raise click.ClickException("Set REDIS_URL (e.g. redis://localhost:6379/0) to use the queue.")
    return runner

class GradingTimeout(BaseException):
    """A job ran past DLA_JOB_TIMEOUT. A BaseException, so that the job's own `except Exception` (which
    turns grader failures into a stored error) cannot swallow it: RQ fails the job, retries it once,
    and the failure callback stores the learner-facing message."""
