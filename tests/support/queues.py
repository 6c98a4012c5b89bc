"""The queue's tests (tests/queue): Debian's redis-server in a temp dir, and the web app on RQ with worker
processes sharing its SQLite database."""
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
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.apps import ready_app
from tests.support.paths import EXERCISE, REPO, SOLUTION
from tests.support.processes import free_port, stop_group

if TYPE_CHECKING:
    from flask import Flask
    from flask.testing import FlaskClient


# Fast failure detection for tests: a job of a dead worker counts as abandoned JOB_TIMEOUT + GRACE seconds
# after it started, and idle workers run their maintenance pass every SWEEP seconds.
QUEUE_ENV = {"DLA_JOB_TIMEOUT": "20", "DLA_HEARTBEAT_GRACE_S": "3", "DLA_QUEUE_SWEEP_S": "2",
             "DLA_RECOVER_AFTER_S": "0", "DLA_JOB_RETRIES": "1", "DLA_WARM_POOL": "0"}
# A worker that grades several jobs keeps one grading process warm, as a deployed worker does (its pool): one
# torch start-up for all of them, not one each. The tests that kill or time out a grade keep cold ones, whose
# length their assertions count on.
ONE_WORKER_MANY_JOBS = {"DLA_WARM_POOL": "1"}


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


class QueueStack:
    """The web app (enqueueing on RQ) and worker processes sharing its SQLite database."""

    def __init__(self, tmp_path: Path, redis: RedisServer, **env: str):
        from academy.runners import runner
        from academy.settings import from_environment

        self.tmp_path = tmp_path
        self.redis = redis
        self.env = {**os.environ, **QUEUE_ENV, **env, "REDIS_URL": redis.url, "DLA_SANDBOX": "local",
                    "DLA_INSTANCE": str(tmp_path / "instance"), "SECRET_KEY": "test", "PYTHONUNBUFFERED": "1"}
        self.env.pop("DATABASE_URL", None)
        config = from_environment(self.env)  # the workers' settings, for the app in this process too
        self.app: Flask = ready_app({"INSTANCE_PATH": str(tmp_path / "instance"), "SANDBOX": "local",
                                     "SECRET_KEY": "test", "TESTING": True, "REQUEUE_ON_START": False,
                                     "SUBMISSION_RATE": (1000, 60), **config})
        self.runner = runner(self.app)
        self.client: FlaskClient = self.app.test_client()
        self.token = self.learner("learner@example.org")
        self.owners: dict[int, str] = {}  # submission id: the token that made it
        self.workers: list[subprocess.Popen] = []

    def learner(self, email: str) -> str:
        """A new account's API token (each account may have one submission waiting at a time)."""
        from academy.data.db import get_session
        from academy.web.auth import create_account
        from academy.web.security import new_api_token

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

    def wait_idle(self, timeout: float = 30) -> None:
        """Until every worker says it is idle (RQ's state in Redis): a job's row is stored before RQ finishes the
        job (its heartbeat, its result), so a row that reads done does not yet mean a waiting worker."""
        from rq import Worker

        deadline = time.monotonic() + timeout
        while not (workers := Worker.all(connection=self.runner.connection)) or \
                any(worker.get_state() != "idle" for worker in workers):
            if time.monotonic() > deadline:
                raise AssertionError(f"the workers were not idle after {timeout} s; worker logs:\n{self.logs()}")
            time.sleep(0.1)

    def start_worker(self, *args: str) -> subprocess.Popen:
        log = open(self.tmp_path / f"worker-{len(self.workers)}.log", "wb")
        # Own session: killing its process group takes the worker *and* its grading child, like a
        # machine that dies.
        process = subprocess.Popen([sys.executable, "-m", "academy", "worker", *args], env=self.env,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
        self.workers.append(process)
        return process

    def kill_worker(self, process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def logs(self, tail: int | None = 8000) -> str:
        """The workers' logs, each cut to its last `tail` characters (for a failure message); None: whole."""
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-tail if tail else 0:]}"
                         for path in sorted(self.tmp_path.glob("worker-*.log")))

    def close(self) -> None:
        from academy import jobs

        for process in self.workers:
            stop_group(process)
        jobs.shutdown(self.app)  # its listener for finished rows too: no thread outlives the test
