"""The platform as it runs (gunicorn, one process, 8 threads, the in-process grading runner, a fresh SQLite
database) and HTTP clients that each come from their own loopback address (127.0.0.x), like people on
different machines, or that say who they are through X-Forwarded-For to a server that trusts one proxy."""
from __future__ import annotations

import http.client
import json as jsonlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.queue.conftest import free_port

REPO = Path(__file__).resolve().parents[2]
EXERCISE = "mixed-precision/amp-step"
SOLUTION = (REPO / "exercises/mixed-precision/amp-step/solution.py").read_text()
# Hostile: holds a grader for as long as it may (the exercise's time limit), then fails.
SLEEPER = "import time\ntime.sleep(600)\n"


class LiveServer:
    """gunicorn serving `academy:create_app()` from its own instance folder."""

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
        self.log = open(self.folder / "server.log", "ab")
        gunicorn = Path(sys.executable).with_name("gunicorn")
        self.process = subprocess.Popen(
            [str(gunicorn), "--workers", "1", "--threads", "8", "--bind", f"127.0.0.1:{self.port}",
             "--graceful-timeout", "1", "academy:create_app()"],
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


class Response:
    def __init__(self, raw: http.client.HTTPResponse):
        self.status = raw.status
        self.headers = raw.headers
        self.body = raw.read()

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return jsonlib.loads(self.body)

    @property
    def location(self) -> str | None:
        return self.headers.get("Location")


class Client:
    """One browser (or script): its own source address, its own cookie, the page's CSRF token."""

    def __init__(self, server: LiveServer, address: str = "127.0.0.1", forwarded_for: str | None = None,
                 token: str | None = None):
        self.server, self.address, self.forwarded_for, self.token = server, address, forwarded_for, token
        self.cookie: str | None = None  # the session cookie, "session=..."

    def request(self, method: str, url: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> Response:
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60,
                                                source_address=(self.address, 0))
        sent = dict(headers or {})
        if self.cookie:
            sent["Cookie"] = self.cookie
        if self.forwarded_for:
            sent["X-Forwarded-For"] = self.forwarded_for
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        try:
            connection.request(method, url, body=body, headers=sent)
            response = Response(connection.getresponse())
        finally:
            connection.close()
        for header in response.headers.get_all("Set-Cookie") or []:
            name_value = header.split(";", 1)[0]
            if name_value.startswith("session="):
                self.cookie = None if name_value == "session=" else name_value
        return response

    def get(self, url: str) -> Response:
        return self.request("GET", url)

    def csrf(self) -> str:
        return re.search(r'name="csrf-token" content="([^"]+)"', self.get("/").text).group(1)

    def form(self, url: str, data: dict[str, str] | None = None, csrf: bool = True) -> Response:
        fields = {**({"csrf_token": self.csrf()} if csrf else {}), **(data or {})}
        return self.request("POST", url, urllib.parse.urlencode(fields).encode(),
                            {"Content-Type": "application/x-www-form-urlencoded"})

    def api(self, method: str, url: str, json: Any = None, body: bytes | None = None) -> Response:
        headers = {"Content-Type": "application/json"}
        if not self.token:
            headers["X-CSRF-Token"] = self.csrf()
        payload = body if body is not None else (jsonlib.dumps(json).encode() if json is not None else None)
        return self.request(method, url, payload, headers)

    def guest(self) -> Client:
        response = self.form("/auth/guest")
        assert response.status == 302, (response.status, response.text[-500:])
        return self

    def signup(self, email: str, password: str = "password123") -> Response:
        return self.form("/auth/signup", {"email": email, "password": password})

    def signin(self, email: str, password: str = "password123") -> Response:
        return self.form("/auth/signin", {"email": email, "password": password})

    def submit(self, code: str = SOLUTION, exercise: str = EXERCISE) -> Response:
        return self.api("POST", "/api/submissions", {"exercise": exercise, "code": code})

    def wait(self, submission_id: int, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            state = self.api("GET", f"/api/submissions/{submission_id}").json()
            if state["status"] in ("done", "error"):
                return state
            assert time.monotonic() < deadline, f"submission {submission_id} still {state['status']}"
            time.sleep(0.2)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator:
    """serve(**env): a started LiveServer with these environment variables; stopped after the test."""
    servers: list[LiveServer] = []

    def _serve(**env: str) -> LiveServer:
        folder = tmp_path / f"server-{len(servers)}"
        folder.mkdir()
        server = LiveServer(folder, env).start()
        servers.append(server)
        return server
    yield _serve
    for server in servers:
        server.stop()


@pytest.fixture
def server(serve) -> LiveServer:  # noqa: ANN001
    return serve()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for a module's tests that each use their own client addresses."""
    server = LiveServer(tmp_path_factory.mktemp("server"), {}).start()
    yield server
    server.stop()
