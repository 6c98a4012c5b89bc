"""The warm pool: single-use containers, replacements, bursts without loss, clear failures."""
import subprocess
import threading
import time

import pytest

from grader.grading import run_submission
from sandbox import SandboxError
from sandbox.docker import ContainerSpec
from sandbox.pool import WarmPool
from tests.conftest import EXERCISES

pytestmark = pytest.mark.docker
SOLUTION = (EXERCISES / "mixed-precision" / "amp-step" / "solution.py").read_text()


def test_a_burst_gets_every_verdict_each_from_its_own_container(warm_pool):
    assert warm_pool.wait_warm()
    started_before = warm_pool.started_total
    seeds = list(range(100, 106))
    results: dict[int, dict] = {}

    def submit(seed: int) -> None:
        results[seed] = run_submission("mixed-precision/amp-step", SOLUTION, sandbox="docker", seed=seed)

    threads = [threading.Thread(target=submit, args=(seed,)) for seed in seeds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    assert sorted(results) == seeds
    assert all(r["passed"] and r["sandbox"] == "docker" and r["seed"] == s for s, r in results.items()), results
    # one fresh container per submission: each take started a replacement
    assert warm_pool.started_total - started_before == len(seeds)


def test_a_waiting_container_that_dies_is_replaced(warm_pool):
    assert warm_pool.wait_warm()
    victim = warm_pool.waiting()[0]
    subprocess.run(["docker", "rm", "-f", victim], capture_output=True, check=True)
    deadline = time.monotonic() + 10
    while victim in warm_pool.waiting() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert victim not in warm_pool.waiting()
    assert warm_pool.wait_warm()
    result = run_submission("mixed-precision/amp-step", SOLUTION, sandbox="docker")
    assert result["passed"]


def test_a_pool_without_its_image_says_so(docker_image):
    pool = WarmPool(size=1, spec=ContainerSpec(image="dla-grader:no-such-tag", memory_mb=1024))
    with pytest.raises(SandboxError, match="no image dla-grader:no-such-tag.*sandbox/build-images"):
        pool.start()
