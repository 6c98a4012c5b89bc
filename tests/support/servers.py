"""The app served as scripts/run serves it (academy.serve), in its own process and instance folder, for the
tests that attack a running server over real sockets: LiveServer (tests/abuse, tests/deploy), and ScriptedServer,
started by scripts/run's own command line (tests/deploy/test_slow_clients.py, tests/abuse/test_red_team_51.py)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.clients import Client
from tests.support.paths import REPO
from tests.support.processes import free_port, stop_group

# The scripted server's settings, set small: 2 threads, a 2 s request timeout, a 4 s idle timeout.
THREADS = 2
REQUEST_TIMEOUT_S = 2
IDLE_TIMEOUT_S = 4

# Hostile: holds a grader for as long as it may (the exercise's time limit), then fails.
SLEEPER = "import time\ntime.sleep(600)\n"


class LiveServer:
    """`academy.serve` (waitress, as scripts/run serves the site) on `academy:create_app()`, from its own
    instance folder."""

    def __init__(self, folder: Path, env: dict[str, str]):
        self.folder = folder
        self.port = free_port()
        self.instance = folder / "instance"
        self.env = {**os.environ, "DLA_INSTANCE": str(self.instance), "DLA_SANDBOX": "local",
                    "DLA_WARM_POOL": "0", "PYTHONUNBUFFERED": "1", **env}
        for name in ("DATABASE_URL", "REDIS_URL", "DLA_EXERCISES", "SECRET_KEY"):
            if name not in env:
                self.env.pop(name, None)
        self.process: subprocess.Popen | None = None

    def start(self) -> LiveServer:
        self.init_db()
        self.log = open(self.folder / "server.log", "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "academy.serve", "--bind", f"127.0.0.1:{self.port}", "--threads", "8",
             "--graceful-timeout", "1"],
            env=self.env, cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                if Client(self).get("/api/exercises").status == 200:
                    return self
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server did not start:\n{self.logs()}")
            time.sleep(0.2)

    def init_db(self) -> None:
        """What an operator runs before the first start (`flask --app academy init-db`), with this server's
        settings, in this process: a second's Python start-up less per server."""
        from academy import init_db
        from academy.settings import from_environment

        init_db({"INSTANCE_PATH": str(self.instance), "REQUEUE_ON_START": False, **from_environment(self.env)})

    def logs(self) -> str:
        return (self.folder / "server.log").read_text(errors="replace")[-4000:]

    def flask(self, *args: str) -> subprocess.CompletedProcess:
        """`flask --app academy ARGS` on this server's instance folder, as an administrator would."""
        return subprocess.run([sys.executable, "-m", "flask", "--app", "academy", *args], env=self.env, cwd=REPO,
                              capture_output=True, text=True, timeout=120)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None


def served_command() -> str:
    """scripts/run's own command line for the server (from `.venv/bin/python -m academy.serve` to its `&`)."""
    script = (REPO / "scripts" / "run").read_text()
    found = re.search(r"^(\.venv/bin/python -m academy\.serve .*?) &$", script, re.M | re.S)
    assert found, "scripts/run no longer starts academy.serve"
    return found.group(1)


class ScriptedServer:
    """The academy on a fresh instance, served as scripts/run serves it (or as it was served: gunicorn)."""

    def __init__(self, folder: Path, shape: str, env: dict[str, str] | None = None):
        self.folder, self.shape, self.port = folder, shape, free_port()
        self.env = {**os.environ, "DLA_INSTANCE": str(folder / "instance"), "DLA_SANDBOX": "local",
                    "DLA_WARM_POOL": "0", "DLA_TUTOR": "0", "PYTHONUNBUFFERED": "1", "HOST": "127.0.0.1",
                    "PORT": str(self.port), "DLA_WEB_THREADS": str(THREADS),
                    "DLA_WEB_REQUEST_TIMEOUT": str(REQUEST_TIMEOUT_S), "DLA_WEB_IDLE_TIMEOUT": str(IDLE_TIMEOUT_S),
                    "DLA_WEB_GRACEFUL_TIMEOUT": "60", **(env or {})}
        for name in ("DATABASE_URL", "REDIS_URL", "DLA_EXERCISES", "SECRET_KEY"):
            self.env.pop(name, None)
        self.log_path = folder / f"{shape}.log"
        self.start_command: list[str] | None = None  # scripts/run's, unless a test says otherwise

    def start(self) -> ScriptedServer:
        from academy import init_db
        from academy.settings import from_environment

        init_db({"INSTANCE_PATH": self.env["DLA_INSTANCE"], "REQUEUE_ON_START": False,
                 **from_environment(self.env)})
        if self.start_command:
            command = self.start_command
        elif self.shape == "waitress":
            command = ["bash", "-c", f"exec {served_command()}"]
        else:  # the shape before: scripts/run's gunicorn line, with as many threads
            command = [str(Path(sys.executable).with_name("gunicorn")), "--workers", "1", "--threads", str(THREADS),
                       "--bind", f"127.0.0.1:{self.port}", "--access-logfile", "-", "--graceful-timeout", "1",
                       "-c", "python:academy.gunicorn_hooks", "academy:create_app()"]
        self.process = subprocess.Popen(command, cwd=REPO, env=self.env, stdout=open(self.log_path, "wb"),
                                        stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                if Client(self).get("/api/exercises").status == 200:
                    return self
            except OSError:
                pass
            assert self.process.poll() is None and time.monotonic() < deadline, self.logs()
            time.sleep(0.1)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def stop(self) -> None:
        stop_group(self.process, timeout=15)
