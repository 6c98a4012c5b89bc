"""What the worker does with what it finds in Redis, on a real redis-server: JSON jobs only, our own
function only, and turns per fair key on the RQ queue as in the web process."""
from __future__ import annotations

import json
import os
import time
import zlib
from datetime import datetime
from pathlib import Path

import pytest
from redis import Redis
from rq import Callback, Queue
from rq.serializers import JSONSerializer

from tests.support.queues import ONE_WORKER_MANY_JOBS, QueueStack

pytestmark = [pytest.mark.redis, pytest.mark.slow]

# Holds a grader a few seconds, then fails: long enough to see who goes first.
NAP = "import time\ntime.sleep(1)\n"


def test_jobs_planted_in_redis_never_run(make_stack, tmp_path: Path) -> None:  # noqa: ANN001
    stack: QueueStack = make_stack()
    marker = tmp_path / "owned"
    plain = Redis.from_url(stack.redis.url)
    # What learner code that reached Redis did before: RQ's default (pickle) serializer ...
    Queue("grading", connection=plain).enqueue(os.system, f"touch {marker}-pickle")
    # ... and the same as JSON, naming another function, or ours with a foreign callback.
    as_json = Queue("grading", connection=plain, serializer=JSONSerializer)
    as_json.enqueue("os.system", f"touch {marker}-json")
    as_json.enqueue("academy.runners.rq.perform", "grade_submission", 999, "x", on_failure=Callback("os.system"))
    submission_id = stack.submit()  # a real one behind them
    stack.start_worker()
    state = stack.wait(submission_id)
    assert state["status"] == "done" and state["result"]["passed"], (state, stack.logs())
    assert not list(tmp_path.glob("owned*"))
    assert stack.logs().count("refused job") == 3, stack.logs()
    assert stack.runner.queue.count == 0


def test_jobs_are_json_on_redis(make_stack) -> None:  # noqa: ANN001
    stack: QueueStack = make_stack()
    submission_id = stack.submit()
    raw = Redis.from_url(stack.redis.url).hget(f"rq:job:submission-{submission_id}", "data")
    try:
        raw = zlib.decompress(raw)
    except zlib.error:
        pass
    assert json.loads(raw) == ["academy.runners.rq.perform", None, ["grade_submission", submission_id, "user-1"], {}]


def _finished(state: dict) -> datetime:
    return datetime.fromisoformat(state["finished_at"].rstrip("Z"))


def _wait(client, submission_id: int, timeout: float = 120) -> dict:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while (state := client.get(f"/api/submissions/{submission_id}").get_json())["status"] not in ("done", "error"):
        assert time.monotonic() < deadline, state
        time.sleep(0.2)
    return state


def test_guests_of_one_client_take_one_turn_on_the_queue(make_stack) -> None:  # noqa: ANN001
    stack: QueueStack = make_stack(**ONE_WORKER_MANY_JOBS)
    hostile = []
    for _ in range(3):
        guest = stack.app.test_client()
        guest.environ_base["REMOTE_ADDR"] = "10.9.9.9"  # one client, three guests
        page = guest.get("/").get_data(as_text=True)
        token = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        assert guest.post("/auth/guest", data={"csrf_token": token}).status_code == 302
        token = guest.get("/").get_data(as_text=True).split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        created = guest.post("/api/submissions", json={"exercise": "mixed-precision/amp-step", "code": NAP},
                             headers={"X-CSRF-Token": token})
        assert created.status_code == 202, created.get_data(as_text=True)
        hostile.append((guest, created.get_json()["id"]))
    assert stack.runner.queue.count == 1  # the other two wait for the client's next turn
    learner = stack.submit()
    stack.start_worker()  # one worker: the order is the line's order
    verdict = stack.wait(learner, timeout=120)
    assert verdict["status"] == "done", (verdict, stack.logs())
    states = [_wait(guest, sid) for guest, sid in hostile]
    # First come, first served: the learner after all three naps. In turns: after at most one.
    assert sum(_finished(s) < _finished(verdict) for s in states) <= 1, (verdict, states)
    assert all(s["status"] in ("done", "error") for s in states)
    assert not stack.runner.connection.hgetall(stack.runner.holders)  # every turn handed back
