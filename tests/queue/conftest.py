"""A real redis-server on a free loopback port, the web app on RQ, and RQ worker processes to kill."""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

REPO = Path(__file__).resolve().parents[2]
EXERCISE = "mixed-precision/amp-step"
SOLUTION = (REPO / "exercises/mixed-precision/amp-step/solution.py").read_text()

# Fast failure detection for tests: a job of a dead worker counts as abandoned JOB_TIMEOUT + GRACE seconds
# after it started, and idle workers run their maintenance pass every SWEEP seconds.
QUEUE_ENV = {"DLA_JOB_TIMEOUT": "20", "DLA_HEARTBEAT_GRACE_S": "3", "DLA_QUEUE_SWEEP_S": "2",
             "DLA_RECOVER_AFTER_S": "0", "DLA_JOB_RETRIES": "1", "DLA_POOL_SIZE": "0"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """Debian's redis-server in a temp dir, without persistence: a restart loses every job. It requires a
    password, as the compose stack's does."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.port = free_port()
        self.password = secrets.token_hex(12)
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed (apt-get install redis-server)")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--save", "", "--appendonly", "no", "--protected-mode", "yes",
             "--requirepass", self.password],
            stdout=open(self.folder / "redis.log", "ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not self.ping():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start: " + (self.folder / "redis.log").read_text())
            time.sleep(0.05)
        return self

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(f"AUTH {self.password}\r\nPING\r\n".encode())
                answer = b""
                while answer.count(b"\r\n") < 2:
                    chunk = sock.recv(64)
                    if not chunk:
                        return False
                    answer += chunk
                return answer == b"+OK\r\n+PONG\r\n"
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    folder = tmp_path / "redis"
    folder.mkdir()
    server = RedisServer(folder).start()
    yield server
    server.stop()


class QueueStack:
    """The web app (enqueueing on RQ) and worker processes sharing its SQLite database."""

    def __init__(self, tmp_path: Path, redis: RedisServer, **env: str):
        from academy import create_app
        from academy.queue import install_runner

        self.tmp_path = tmp_path
        self.redis = redis
        self.env = {**os.environ, **QUEUE_ENV, **env, "REDIS_URL": redis.url, "DLA_SANDBOX": "local",
                    "DLA_INSTANCE": str(tmp_path / "instance"), "SECRET_KEY": "test", "PYTHONUNBUFFERED": "1"}
        self.env.pop("DATABASE_URL", None)
        config = {key: value for key, value in self.env.items() if key.startswith("DLA_") or key == "REDIS_URL"}
        self.app: Flask = create_app({"INSTANCE_PATH": str(tmp_path / "instance"), "SANDBOX": "local",
                                      "SECRET_KEY": "test", "TESTING": True, "REQUEUE_ON_START": False,
                                      "SUBMISSION_RATE": (1000, 60), **config})
        self.runner = install_runner(self.app)
        self.client: FlaskClient = self.app.test_client()
        self.token = self.learner("learner@example.org")
        self.owners: dict[int, str] = {}  # submission id: the token that made it
        self.workers: list[subprocess.Popen] = []

    def learner(self, email: str) -> str:
        """A new account's API token (each account may have one submission waiting at a time)."""
        from academy.auth import create_account
        from academy.db import get_session
        from academy.security import new_api_token

        with self.app.app_context():
            user = create_account(email, "password123")
            token = new_api_token(user, "test")
            get_session().commit()
        return token

    def submit(self, code: str = SOLUTION, exercise: str = EXERCISE, token: str | None = None) -> int:
        response = self.client.post("/api/submissions", json={"exercise": exercise, "code": code},
                                    headers={"Authorization": f"Bearer {token or self.token}"})
        assert response.status_code == 202, response.get_data(as_text=True)
        self.owners[response.get_json()["id"]] = token or self.token
        return response.get_json()["id"]

    def fetch(self, submission_id: int) -> dict[str, Any]:
        token = self.owners.get(submission_id, self.token)
        response = self.client.get(f"/api/submissions/{submission_id}", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200
        return response.get_json()

    def wait(self, submission_id: int, until: tuple[str, ...] = ("done", "error"),
             timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            state = self.fetch(submission_id)
            if state["status"] in until:
                return state
            if time.monotonic() > deadline:
                raise AssertionError(f"submission {submission_id} still {state['status']} after {timeout} s; "
                                     f"worker logs:\n{self.logs()}")
            time.sleep(0.1)

    def start_worker(self, *args: str) -> subprocess.Popen:
        log = open(self.tmp_path / f"worker-{len(self.workers)}.log", "wb")
        # Own session: killing its process group takes the worker *and* its grading child, like a
        # machine that dies.
        process = subprocess.Popen([sys.executable, "-m", "academy.queue", "worker", *args], env=self.env,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
        self.workers.append(process)
        return process

    def kill_worker(self, process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
                         for path in sorted(self.tmp_path.glob("worker-*.log")))

    def close(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()


@pytest.fixture
def make_stack(tmp_path: Path, redis_server: RedisServer) -> Iterator:
    stacks: list[QueueStack] = []

    def _make(**env: str) -> QueueStack:
        stack = QueueStack(tmp_path, redis_server, **env)
        stacks.append(stack)
        return stack
    yield _make
    for stack in stacks:
        stack.close()
