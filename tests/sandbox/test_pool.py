"""Warm pools, for both sandboxes: single-use processes, replacements, bursts that grow the pool and
idle time that shrinks it, clear failures. The local ones run everywhere (a fork server); the docker
ones need the engine."""
import os
import signal
import threading
import time

import pytest

from grader.core.settings import exercises_root
from grader.host.grading import run_submission
from grader.host.sandboxes import get_sandbox
from sandbox import SandboxError
from sandbox.docker import ContainerSpec
from sandbox.docker import warm_pool as docker_pool
from sandbox.local import LocalSandbox
from sandbox.pool import WarmPool
from tests.support.grading import answer_verdict
from tests.support.paths import EXERCISES

SOLUTION = (EXERCISES / "mixed-precision" / "amp-step" / "solution.py").read_text()


def burst(sandbox, seeds: list[int]) -> dict[int, dict]:
    results: dict[int, dict] = {}

    def submit(seed: int) -> None:
        results[seed] = run_submission("mixed-precision/amp-step", SOLUTION, sandbox=sandbox, seed=seed)

    threads = [threading.Thread(target=submit, args=(seed,)) for seed in seeds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    return results


@pytest.fixture(scope="module")
def local_sandbox():
    sandbox = get_sandbox("local", warm=2)
    assert isinstance(sandbox.inner, LocalSandbox) and sandbox.pool.wait_warm()
    yield sandbox
    sandbox.close()


def test_local_burst_gets_every_verdict_each_from_a_fresh_process(local_sandbox):
    pool = local_sandbox.pool
    started_before = pool.started_total
    seeds = list(range(100, 106))
    results = burst(local_sandbox, seeds)
    assert sorted(results) == seeds
    assert all(r["passed"] and r["sandbox"] == "local" and r["seed"] == s for s, r in results.items()), results
    assert pool.wait_warm()  # the last replacements start in the background (WarmPool.discard)
    assert pool.started_total - started_before >= len(seeds)  # one process per submission, never reused


def test_local_warm_process_is_forked_per_request_and_gone_afterwards(local_sandbox):
    pool = local_sandbox.pool
    assert pool.wait_warm()
    process = pool.take()
    pid = int(process.name.removeprefix("fork-"))
    assert pid not in {int(n.removeprefix("fork-")) for n in pool.waiting()}
    from grader.core.protocol import Request

    verdict = answer_verdict(process, Request("mixed-precision/amp-step", SOLUTION, 3), 10)
    assert verdict.status.value == "passed"
    pool.discard(process)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}"), "a grading process outlived its one request"


def test_pool_grows_under_a_burst_within_its_bound_and_shrinks_when_idle():
    # Cold interpreters take seconds to get ready, long enough for a burst of takers to find none ready.
    from grader.host.sandboxes import harness_entry
    from sandbox.local import environment
    from sandbox.process import PopenProcess

    entry = harness_entry(exercises_root())

    def start(on_change):
        return PopenProcess("cold", list(entry.command), environment(entry), on_change)

    pool = WarmPool(start, size=1, max_size=3, idle_s=1.0)
    try:
        barrier = threading.Barrier(5)

        def impatient_taker() -> None:
            barrier.wait()
            assert pool.take(timeout=0.5) is None  # gives up before anything is warm

        takers = [threading.Thread(target=impatient_taker) for _ in range(5)]
        for thread in takers:
            thread.start()
        for thread in takers:
            thread.join()
        assert pool.started_total == 3, "a burst of 5 takers must grow the pool to its bound of 3, no further"
        deadline = time.monotonic() + 60
        while len(pool.waiting()) > 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(pool.waiting()) == 1, "idle processes beyond the pool's size were not stopped"
        assert pool.wait_warm()
    finally:
        pool.close()
    assert pool.waiting() == []


def test_a_waiting_local_process_that_dies_is_replaced(local_sandbox):
    pool = local_sandbox.pool
    assert pool.wait_warm()
    victim = pool.waiting()[0]
    os.kill(int(victim.removeprefix("fork-")), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while victim in pool.waiting() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert victim not in pool.waiting()
    assert pool.wait_warm()
    assert run_submission("mixed-precision/amp-step", SOLUTION, sandbox=local_sandbox)["passed"]


def test_a_pool_whose_processes_cannot_start_says_so():
    def broken(on_change):
        raise SandboxError("no interpreter here")

    pool = WarmPool(broken, size=3)
    with pytest.raises(SandboxError, match="3 in a row failed to start: no interpreter here"):
        pool.take(timeout=5)
    pool.close()


def test_an_exercise_outside_the_pools_folder_gets_a_cold_process(local_sandbox, tmp_path):
    import shutil

    from grader.core.course import load_course

    shutil.copytree(EXERCISES, tmp_path / "exercises")
    exercise = load_course(tmp_path / "exercises").exercises["mixed-precision/amp-step"]
    started_before = local_sandbox.pool.started_total
    result = run_submission(exercise, SOLUTION, sandbox=local_sandbox)
    assert result["passed"]
    assert local_sandbox.pool.started_total == started_before


@pytest.mark.docker
def test_docker_burst_gets_every_verdict_each_from_its_own_container(docker_sandbox):
    pool = docker_sandbox.pool
    assert pool.wait_warm()
    started_before = pool.started_total
    seeds = list(range(100, 106))
    results = burst(docker_sandbox, seeds)
    assert sorted(results) == seeds
    assert all(r["passed"] and r["sandbox"] == "docker" and r["seed"] == s for s, r in results.items()), results
    assert pool.wait_warm()  # the last replacements start in the background (WarmPool.discard)
    assert pool.started_total - started_before >= len(seeds)  # one fresh container per submission


@pytest.mark.docker
def test_a_waiting_container_that_dies_is_replaced(docker_sandbox):
    import subprocess

    pool = docker_sandbox.pool
    assert pool.wait_warm()
    victim = pool.waiting()[0]
    subprocess.run(["docker", "rm", "-f", victim], capture_output=True, check=True)
    deadline = time.monotonic() + 10
    while victim in pool.waiting() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert victim not in pool.waiting()
    assert pool.wait_warm()
    assert run_submission("mixed-precision/amp-step", SOLUTION, sandbox=docker_sandbox)["passed"]


@pytest.mark.docker
def test_a_pool_without_its_image_says_so(docker_image):
    with pytest.raises(SandboxError, match="no image dla-grader:no-such-tag.*sandbox/build-images"):
        docker_pool(1, ContainerSpec(image="dla-grader:no-such-tag", memory_mb=1024), None)
