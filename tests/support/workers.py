"""The suite on two workers (scripts/test runs pytest-xdist's `-n 2`): which tests one worker runs as a whole
(work units by path: ONE_ENGINE, ONE_TUTOR_MODEL), which unit a worker takes next, and the lock that lets a test
marked `alone` run while the other worker runs nothing. tests/conftest.py imports the hooks (pytest_*) by name,
which registers them; tests/test_workers.py tests them."""
from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

import pytest

# Every test that makes grading containers, or counts them (`tests.support.sandboxes.grading_containers` sees the whole
# engine, not one worker's), runs on one worker, one at a time, as in a single-process run.
ONE_ENGINE = ("tests/integrity/", "tests/sandbox/", "tests/deploy/test_compose.py")
ENGINE_UNIT = "docker engine"  # the name of that one unit
# Every test that asks the tutor's embedded model (the session fixture `tutor_model`) runs on one worker, so the
# model server loads once per run (most of a minute of CPU), not once per worker.
ONE_TUTOR_MODEL = ("tests/tutor/", "tests/browser/test_tutor.py")
TUTOR_UNIT = "tutor model"


def work_unit(nodeid: str) -> str:
    """What one worker runs as a whole: a test module (so a module's fixtures, such as the corpus's and the
    validation's one grading of every selected file, run once), every test of the Docker Engine, or every test
    of the tutor's model."""
    module = nodeid.split("::", 1)[0]
    if module.startswith(ONE_TUTOR_MODEL):
        return TUTOR_UNIT
    return ENGINE_UNIT if module.startswith(ONE_ENGINE) else module


# Units whose tests mostly wait (on a server, a browser, a queue, a sleep) rather than compute. Two of them side by
# side leave the cores idle: in a fresh clone's run they all came last, after the largest units, and both cores were
# 16-41% idle for those 3 minutes (~100 idle core-seconds, sampled each second), against under 2% before them.
WAITING = ("tests/web/", "tests/browser/", "tests/abuse/", "tests/queue/", "tests/lti/", "tests/deploy/")


def waits(unit: str) -> bool:
    return unit.startswith(WAITING)  # the Docker Engine's unit (ENGINE_UNIT, test_compose.py in it) computes


def next_unit(queue: list[str], beside: list[str]) -> str:
    """Which unit of `queue` (largest first) a worker takes next, the other workers running `beside`: one that
    waits beside one that computes, one that computes otherwise, the first of the queue where none is of that kind."""
    want_waiting = any(not waits(unit) for unit in beside)
    return next((unit for unit in queue if waits(unit) == want_waiting), queue[0])


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):
        # xdist's queue holds the largest units first (by test count), so no long one starts last.
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node: object) -> None:
            # xdist's own method, not a public hook: tests/test_workers.py runs two workers and fails if a newer
            # xdist stops calling it. What each other worker runs now: its first unit with a test not yet done.
            beside = [unit for other, units in self.assigned_work.items() if other is not node
                      if (unit := next((scope for scope, done in units.items() if not all(done.values())), None))]
            self.workqueue.move_to_end(next_unit(list(self.workqueue), beside), last=False)
            super()._assign_work_unit(node)

    return ByWorkUnit(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A Docker test outside ONE_ENGINE would run beside another worker's containers: refuse it by name."""
    strays = [item.nodeid for item in items
              if item.get_closest_marker("docker") and work_unit(item.nodeid) != ENGINE_UNIT]
    if strays:
        raise pytest.UsageError("tests marked docker must live under one of " + ", ".join(ONE_ENGINE) +
                                " (tests/support/workers.py: ONE_ENGINE), so one worker runs them all: " +
                                ", ".join(strays))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """A test marked `alone` runs while the other worker runs nothing: it holds this run's lock exclusively,
    every other test holds it shared. Such a test grades against a wall-clock limit that a busy second core
    can push it past (20,000 model calls in a 1-CPU container took 5 s alone and hit amp-step's 10-s limit
    beside another worker)."""
    path = run_lock()
    if path is None:  # one process: nothing runs beside it
        return (yield)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if item.get_closest_marker("alone") else fcntl.LOCK_SH)
        try:
            return (yield)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_lock() -> Path | None:
    """This run's lock file, shared by its workers; None outside xdist."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return None if run is None else Path(tempfile.gettempdir()) / f"dla-tests-{run}.lock"


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker that has finished runs no more tests, so the lock no longer matters to it: the first to finish
    removes the file. The other, still running, opens a new one at its next test and has it to itself."""
    path = run_lock()
    if path is not None:
        path.unlink(missing_ok=True)
