"""Grading through RQ on a real Redis: the happy path, workers killed mid-job, Redis restarted."""
from __future__ import annotations

import time

import pytest
from rq.registry import FailedJobRegistry

from tests.support.queues import ONE_WORKER_MANY_JOBS, QueueStack

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_submission_graded_by_a_worker_process(make_stack) -> None:  # noqa: ANN001
    stack: QueueStack = make_stack()
    submission_id = stack.submit()
    # Stored and queued on Redis before any worker exists: nothing ran in the web process.
    assert stack.fetch(submission_id)["status"] == "queued"
    queue = stack.runner.queue
    assert queue.job_ids == [f"submission-{submission_id}"]

    stack.start_worker()
    state = stack.wait(submission_id)
    assert state["status"] == "done", (state, stack.logs())
    assert state["result"]["passed"] is True and state["result"]["sandbox"] == "local"
    assert queue.count == 0 and FailedJobRegistry(queue=queue).count == 0


def test_worker_killed_mid_job_is_retried_once_then_finished_as_error(make_stack) -> None:  # noqa: ANN001
    # No try may finish here, so the job's timeout only sets when its dead worker's job counts as abandoned
    # (timeout + DLA_HEARTBEAT_GRACE_S after it started): 6 s, not the suite's 20, halves the test's wait. Each
    # try is killed as soon as it is seen running, well inside 6 s.
    stack: QueueStack = make_stack(DLA_JOB_TIMEOUT="6")
    submission_id = stack.submit()
    first = stack.start_worker()
    started = stack.wait(submission_id, until=("running",))["started_at"]
    stack.kill_worker(first)  # the worker and its grading child, mid-job
    assert stack.fetch(submission_id)["status"] == "running"

    # A fresh worker finds the abandoned job (RQ's StartedJobRegistry cleanup) and runs it again ...
    second = stack.start_worker()
    deadline = time.monotonic() + 90
    while (state := stack.wait(submission_id, until=("running", "done", "error")))["started_at"] == started:
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(0.2)
    assert state["status"] == "running", state
    stack.kill_worker(second)  # ... and that try dies too

    stack.start_worker()
    state = stack.wait(submission_id, timeout=90)
    assert state["status"] == "error", (state, stack.logs())
    assert state["error"] == ("Grading stopped because the grading machine went away (2 tries). "
                              "Your code is saved: submit it again.")


def test_killed_worker_job_retried_on_another_worker_finishes(make_stack) -> None:  # noqa: ANN001
    stack: QueueStack = make_stack()
    submission_id = stack.submit()
    first = stack.start_worker()
    stack.wait(submission_id, until=("running",))
    stack.kill_worker(first)
    stack.start_worker()
    state = stack.wait(submission_id, timeout=120)
    assert state["status"] == "done" and state["result"]["passed"] is True, (state, stack.logs())


def test_jobs_lost_by_a_redis_restart_are_reenqueued(make_stack, redis_server) -> None:  # noqa: ANN001
    stack: QueueStack = make_stack(**ONE_WORKER_MANY_JOBS)
    ids = [stack.submit(), stack.submit(token=stack.learner("two@example.org"))]
    redis_server.stop()
    # Redis is down: the web app still takes the submission (stored as queued, 202) and loses nothing.
    ids.append(stack.submit(token=stack.learner("three@example.org")))
    redis_server.start()  # same port, empty: the two queued jobs are gone
    queue = stack.runner.queue
    assert queue.count == 0

    stack.start_worker()  # its start-up recovery pass re-enqueues all three
    states = [stack.wait(i, timeout=120) for i in ids]
    assert [s["status"] for s in states] == ["done"] * 3, stack.logs()
    assert all(s["result"]["passed"] for s in states)


def test_redis_restart_while_a_worker_waits(make_stack, redis_server) -> None:  # noqa: ANN001
    stack: QueueStack = make_stack(**ONE_WORKER_MANY_JOBS)
    stack.start_worker()
    first = stack.submit()
    assert stack.wait(first)["status"] == "done"
    # Redis goes away while the worker waits: not in the moment between the stored row and RQ's own end of the
    # job (its last heartbeat), where RQ's worker quits on any error (docker-compose.yml restarts it).
    stack.wait_idle()
    redis_server.stop()
    time.sleep(1)
    redis_server.start()
    second = stack.submit()  # enqueued on the fresh Redis; the same worker reconnects and grades it
    assert stack.wait(second, timeout=120)["status"] == "done", stack.logs()


def test_job_past_its_timeout_is_retried_then_ends_as_error(make_stack) -> None:  # noqa: ANN001
    stack: QueueStack = make_stack(DLA_JOB_TIMEOUT="2")  # a grade takes ~5 s here
    submission_id = stack.submit()
    stack.start_worker()
    state = stack.wait(submission_id, timeout=60)
    assert state["status"] == "error", (state, stack.logs())
    assert state["error"] == "Grading took longer than 2 s and was stopped. Your code is saved: submit it again."
    # RQ ran it twice. The whole log: two tracebacks can push the retry line out of the tail (CI, 1 of 816).
    assert "Job submission-1: enqueued for retry, 0 remaining" in stack.logs(tail=None)
