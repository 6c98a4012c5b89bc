"""The docker-compose stack, built here from the local base: up, a submission through the HTTP API graded
by the worker in a sandbox container, down. Minutes on a first build; images are cached afterwards."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any, Iterator

import pytest

from tests.support.paths import EXERCISE, REPO, SOLUTION
from tests.support.processes import free_port

pytestmark = [pytest.mark.docker, pytest.mark.slow]


class Stack:
    def __init__(self) -> None:
        self.project = f"dla-test-{secrets.token_hex(3)}"
        self.port = free_port()
        self.env = {**os.environ,
                    "POSTGRES_PASSWORD": secrets.token_urlsafe(16), "REDIS_PASSWORD": secrets.token_hex(16),
                    "DLA_HTTP_PORT": str(self.port),
                    "DLA_WARM_POOL": "1", "DLA_WEB_WORKERS": "2", "DLA_SUBMISSIONS_PER_MINUTE": "100",
                    # Demand the docker sandbox: "auto" would quietly grade in the worker container instead.
                    "DLA_SANDBOX": "docker"}
        self.base = f"http://127.0.0.1:{self.port}"

    def compose(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(["docker-compose", "-p", self.project, "--profile", "cpu", *args], cwd=REPO,
                              env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"docker-compose {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def request(self, method: str, path: str, token: str | None = None, body: Any = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def logs(self) -> str:
        return self.compose("logs", "--no-color", "--tail", "40", "web", "worker-cpu", check=False).stdout


@pytest.fixture(scope="module")
def built() -> None:
    """The stack's images, built (or found cached) once for this module."""
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    build = subprocess.run([str(REPO / "deploy/build-stack")], cwd=REPO, capture_output=True, text=True,
                           timeout=1800)
    assert build.returncode == 0, build.stderr[-4000:]


@pytest.fixture
def stack(built: None) -> Iterator[Stack]:
    stack = Stack()
    try:
        yield stack
    finally:
        stack.compose("down", "--volumes", "--remove-orphans", "--timeout", "20", check=False)


def test_compose_stack_grades_a_submission_through_the_api(stack: Stack) -> None:
    stack.compose("up", "-d", "--scale", "worker=0")
    deadline = time.monotonic() + 240
    while True:
        try:
            if stack.request("GET", "/api/exercises")[0] == 200:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(1)

    stack.compose("exec", "-T", "web", "flask", "--app", "academy", "create-user", "ops@example.org",
                  "--password", "password123")
    token = stack.compose("exec", "-T", "web", "flask", "--app", "academy", "create-token",
                          "ops@example.org").stdout.strip().splitlines()[-1]
    status, created = stack.request("POST", "/api/submissions", token, {"exercise": EXERCISE, "code": SOLUTION})
    assert status == 202, created
    deadline = time.monotonic() + 240
    while (state := stack.request("GET", f"/api/submissions/{created['id']}", token)[1])["status"] \
            not in ("done", "error"):
        assert time.monotonic() < deadline, (state, stack.logs())
        time.sleep(0.5)
    assert state["status"] == "done", (state, stack.logs())
    assert state["result"]["passed"] is True
    # Graded by the worker in a sandbox container on the host's engine, not in the web container.
    assert state["result"]["sandbox"] == "docker", (state["result"], stack.logs())


def test_the_compose_worker_refuses_to_grade_in_the_local_sandbox(built: None) -> None:
    # Inside the worker container namespaces and cgroups cannot be had: the worker must refuse at
    # start-up rather than run learner code next to Redis and its own secrets.
    proc = subprocess.run(["docker", "run", "--rm", "--network", "none", "-e", "DLA_SANDBOX=local",
                           "-e", "REDIS_URL=redis://127.0.0.1:9/0", "-e", "DATABASE_URL=sqlite:////tmp/academy.sqlite",
                           "-e", "DLA_INSTANCE=/tmp/instance", "-e", "SECRET_KEY=test", "dla-app:latest", "worker"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "this worker cannot grade: the local sandbox is refused" in proc.stderr, proc.stderr[-2000:]
    assert "no namespaces" in proc.stderr or "no cgroup" in proc.stderr
