"""A serving process warms its grading pool in the background as it starts (academy.runners.start_serving, what
academy/serve.py and the gunicorn hook call), and says it is ready once the pool's processes wait
(GradingSandbox.ready; serve.py logs "ready"). A first Run sent right after that takes a warm process: it waits for
no grading process to start (torch imports for seconds). Asserted on the pool's state, not on a time: the pool
counts the takes that found no warm process (WarmPool.takes_waited)."""
from __future__ import annotations

from typing import Any, Callable

import pytest
from flask import Flask

from academy.jobs import grading_sandbox
from academy.runners import start_serving
from tests.support.apps import new_session, wait_for
from tests.support.paths import SOLUTION

pytestmark = pytest.mark.slow


def test_a_first_run_right_after_the_server_is_ready_waits_for_no_grading_process(
        make_app: Callable[..., Flask]) -> None:
    app = make_app(WARM_POOL=1, GRADING_WORKERS=1)
    sandbox = grading_sandbox(app)
    assert not sandbox.ready.is_set()  # the factory started nothing
    warming = start_serving(app)
    assert warming is not None  # the pool warms in the background: start_serving did not wait for it
    learner = new_session(app).guest()  # pages are served while it warms
    assert sandbox.ready.wait(180), "the grading pool never warmed"
    pool = sandbox.get().pool
    assert pool is not None and len(pool.waiting()) == pool.size  # ready: its processes started and wait
    response = learner.api("POST", "/api/runs", json={"exercise": "mixed-precision/amp-step",
                                                       "code": SOLUTION})
    assert response.status_code == 202, response.get_json()
    run: Any = wait_for(app, response.get_json()["id"])
    assert run.status == "done" and run.result["status"] == "ran", run.result
    assert pool.takes_waited == 0  # the Run took a process already warm
