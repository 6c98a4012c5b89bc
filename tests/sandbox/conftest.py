"""Docker-sandbox tests run against a real Docker Engine and the CPU grader image.

The session starts the engine (sandbox/ensure-engine) and builds or refreshes the image
(sandbox/build-images, seconds when cached). They are skipped, with the reason printed, only when no
engine can run here at all; a failing image build is an error, not a skip.
"""
from __future__ import annotations

import subprocess

import pytest

from tests.support.paths import REPO
from tests.support.sandboxes import wait_no_grading_containers


def _engine_problem() -> str | None:
    """Why no Docker Engine can run here, or None when one answers (after starting it if needed)."""
    try:
        proc = subprocess.run([str(REPO / "sandbox" / "ensure-engine")], capture_output=True, text=True,
                              timeout=180)
    except subprocess.TimeoutExpired:
        return "sandbox/ensure-engine: no engine answered within 180 s"
    if proc.returncode != 0:
        return f"no Docker Engine can run here: {proc.stderr.strip()[-500:]}"
    return None


@pytest.fixture(scope="session")
def docker_image() -> str:
    """The CPU grader image, current with this checkout's grader and exercise files."""
    problem = _engine_problem()
    if problem:
        print(f"\nSKIPPING docker-sandbox tests: {problem}")
        pytest.skip(problem)
    from grader.host.sandboxes import docker_sandbox

    if not docker_sandbox().available()[0]:
        proc = subprocess.run([str(REPO / "sandbox" / "build-images")], capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, f"sandbox/build-images failed:\n{proc.stderr[-3000:]}"
    ok, why = docker_sandbox().available()
    assert ok, why
    return docker_sandbox().image


@pytest.fixture(scope="package")
def docker_sandbox(docker_image):
    """The docker sandbox with a warm pool of 2 for this folder's tests; closing it must leave no
    container behind."""
    from grader.host.sandboxes import get_sandbox

    sandbox = get_sandbox("docker", warm=2)
    assert sandbox.pool.wait_warm(), "the warm pool never got warm"
    yield sandbox
    sandbox.close()
    assert wait_no_grading_containers() == []


@pytest.fixture(scope="package")
def warm_pool(docker_sandbox):
    return docker_sandbox.pool
