"""Helpers the tests share: paths, the course's amp-step exercise, and the servers and clients that
several folders drive. Fixtures stay in the conftest modules; these are plain code any test may import."""
from __future__ import annotations

import atexit
import contextlib
import glob
import http.client
import json as jsonlib  # Client.request takes a `json` argument
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest

if TYPE_CHECKING:  # the grader's tests import this module too: they need neither Flask nor the app
    from flask import Flask
    from flask.testing import FlaskClient

    from academy.data.models import Submission


# --- paths, the course, the grader's command line, attacks

REPO = Path(__file__).resolve().parent.parent
EXERCISES = REPO / "exercises"


# The amp-step reference solution under another name, for attacks that smuggle it in.
AMP_SOLUTION = re.sub(r"\bdef train_step\(", "def _solution_step(",
                      (EXERCISES / "mixed-precision" / "amp-step" / "solution.py").read_text())
# A hostile amp-step submission that PASSES exactly when its `attack()` returns True (it escaped): then
# train_step runs the reference solution; otherwise it raises "the attack was contained".
GATED = '''
import ctypes, os, signal, socket, subprocess, sys, time

{attack}

ESCAPED = attack()

{solution}

def train_step(model, optimizer, scaler, loss_fn, x, y):
    if ESCAPED:
        return _solution_step(model, optimizer, scaler, loss_fn, x, y)
    raise RuntimeError("the attack was contained")
'''


def gated(attack: str) -> str:
    return GATED.format(attack=attack, solution=AMP_SOLUTION)


def answer_verdict(process: Any, request: Any, time_limit_s: float, entry: Any = None) -> Any:
    """The raw verdict a started grading process (sandbox.process.EntryProcess) answers `request` with."""
    from grader.host.grading import verdict_of
    from grader.host.sandboxes import harness_entry
    from sandbox import Work

    work = Work(request.encode(), entry or harness_entry(EXERCISES), time_limit_s, 3072)
    return verdict_of(process.answer(work), time_limit_s)


def run_grader(*args: str, stdin: bytes | None = None, timeout: float = 120,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the installed `grader` console script, as a user would."""
    grader = Path(sys.executable).with_name("grader")
    return subprocess.run([str(grader), *args], capture_output=True, input=stdin, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=REPO)


def check_json(exercise: str, path: Path, *extra: str, here: Any = None) -> tuple[int, dict]:
    """`grader check EXERCISE PATH --json --sandbox local`: the console script, or `run_grader_here(here, ...)`."""
    args = ("check", exercise, str(path), "--json", "--sandbox", "local", *extra)
    proc = run_grader(*args) if here is None else run_grader_here(here, *args)
    assert proc.stdout, proc.stderr.decode()
    return proc.returncode, jsonlib.loads(proc.stdout)


def run_grader_here(sandbox: Any, *args: str) -> subprocess.CompletedProcess:
    """`grader ARGS` in this process (click's CliRunner): the same command, output and exit code as
    `run_grader`, except that where the command would make a new cold sandbox of `sandbox`'s kind, it grades
    through `sandbox`, a warm one the test session keeps: a fresh interpreter's torch start-up (4-5 CPU-s here)
    saved per call. The console script as a user runs it, a cold process, stays tested through `run_grader`.
    Not thread-safe (CliRunner swaps sys.stdout): call it from one thread at a time."""
    from unittest import mock

    from click.testing import CliRunner

    from grader.core.settings import exercises_root
    from grader.host.cli import main

    def the_warm_one(name: str, *, course_root: Path | None = None, warm: int = 0, **_: Any) -> Any:
        assert name == sandbox.name, f"the command asked for a {name} sandbox; this one is {sandbox.name}"
        # A pool it would own (and close), or one for another course (graded cold, silently): not this one's use.
        assert not warm and course_root in (None, exercises_root()), (warm, course_root)
        return sandbox

    with mock.patch("grader.host.sandboxes.get_sandbox", side_effect=the_warm_one) as made:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert made.called, "the command made no sandbox through get_sandbox: it did not grade through the warm one"
    return subprocess.CompletedProcess(["grader", *args], result.exit_code, result.stdout_bytes, result.stderr_bytes)


@contextlib.contextmanager
def bait_server(payload: bytes) -> Iterator[tuple[int, list[int]]]:
    """A TCP server on the host's loopback that hands `payload` (say, a reference solution) to whoever
    connects: (port, connections). A network attack that reached it would win the payload."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    connections: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            connections.append(1)
            conn.sendall(payload)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], connections
    finally:
        stop.set()
        thread.join()
        server.close()


def caught_by(result: dict) -> set[str]:
    """The checks that caught a submission: those that failed, and those reported skipped because
    another check's failure explains them (they failed too; grader/result.py shows one message)."""
    return {c["id"] for c in result["checks"]
            if c["status"] == "failed" or (c["status"] == "skipped" and c["because"] != "load")}


# --- the amp-step exercise; Redis and RQ workers

EXERCISE = "mixed-precision/amp-step"
SOLUTION = (REPO / "exercises/mixed-precision/amp-step/solution.py").read_text()


# Fast failure detection for tests: a job of a dead worker counts as abandoned JOB_TIMEOUT + GRACE seconds
# after it started, and idle workers run their maintenance pass every SWEEP seconds.
QUEUE_ENV = {"DLA_JOB_TIMEOUT": "20", "DLA_HEARTBEAT_GRACE_S": "3", "DLA_QUEUE_SWEEP_S": "2",
             "DLA_RECOVER_AFTER_S": "0", "DLA_JOB_RETRIES": "1", "DLA_WARM_POOL": "0"}
# A worker that grades several jobs keeps one grading process warm, as a deployed worker does (its pool): one
# torch start-up for all of them, not one each. The tests that kill or time out a grade keep cold ones, whose
# length their assertions count on.
ONE_WORKER_MANY_JOBS = {"DLA_WARM_POOL": "1"}


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


def stop_group(process: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM to a process started with start_new_session=True and its group; SIGKILL after `timeout`."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# --- an app whose instance is ready, as `flask --app academy init-db` leaves it

def ready_app(config: dict[str, Any]) -> Flask:
    """create_app(config), then its instance made ready (academy.instance.init_instance, what `init-db` runs)."""
    from academy import create_app

    return ready_instance(create_app(config))


def ready_instance(app: Flask) -> Flask:
    """`init-db` for `app`'s instance. Its default SQLite database starts as a copy of one migrated once per
    test run (the migrations take a sixth of a second per app; tests/deploy runs them for real); init-db's
    own code then finds it at the newest migration and makes the rest (folder, secret key) as it would."""
    from academy.instance import init_instance
    from academy.settings import settings

    database = Path(app.instance_path) / "academy.sqlite"
    if settings(app).database_url == f"sqlite:///{database}" and not database.exists():
        database.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_migrated_database(), database)
    init_instance(app)
    return app


_MIGRATED: list[Path] = []


def _migrated_database() -> Path:
    """An empty SQLite database at the newest migration, made by init-db's code once per test process."""
    if not _MIGRATED:
        from academy import create_app
        from academy.instance import init_instance

        folder = Path(tempfile.mkdtemp(prefix="dla-migrated-"))
        app = create_app({"INSTANCE_PATH": str(folder), "SECRET_KEY": "template", "REQUEUE_ON_START": False})
        init_instance(app)
        app.extensions["academy.engine"].dispose()  # the last connection folds SQLite's WAL into the file
        _MIGRATED.append(folder / "academy.sqlite")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return _MIGRATED[0]


# --- the app through Flask's test client

LESSON = "mixed-precision"


def name_of(email: str) -> str:
    """The display name a test's sign-up gives (sign-up asks for one): the email's local part, capitalised."""
    return email.split("@")[0].replace(".", " ").title() or "Learner"


class WebSession:
    """A test client that keeps the CSRF token like the real pages do."""

    def __init__(self, client: FlaskClient):
        self.client = client

    def csrf(self) -> str:
        page = self.client.get("/").get_data(as_text=True)
        return re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)

    def post(self, url: str, **kwargs: Any):  # noqa: ANN201
        data = kwargs.pop("data", {})
        return self.client.post(url, data={"csrf_token": self.csrf(), **data}, **kwargs)

    def api(self, method: str, url: str, json: Any = None, **kwargs: Any):  # noqa: ANN201
        headers = {"X-CSRF-Token": self.csrf(), **kwargs.pop("headers", {})}
        return self.client.open(url, method=method, json=json, headers=headers, **kwargs)

    def guest(self) -> "WebSession":
        self.post("/auth/guest")
        return self

    def signup(self, email: str, password: str = "password123", name: str | None = None):  # noqa: ANN201
        return self.post("/auth/signup", data={"email": email, "password": password,
                                               "name": name if name is not None else name_of(email)})

    def signin(self, email: str, password: str = "password123"):  # noqa: ANN201
        return self.post("/auth/signin", data={"email": email, "password": password})


def new_session(app: Flask) -> WebSession:
    return WebSession(app.test_client())


def wait_for(app: Flask, submission_id: int, timeout: float = 120) -> Submission:
    from academy.data.db import get_session
    from academy.data.models import Submission

    deadline = time.monotonic() + timeout
    while True:
        with app.app_context():
            submission = get_session().get(Submission, submission_id)
            if submission.status in ("done", "error"):
                return submission
        if time.monotonic() > deadline:
            raise AssertionError(f"submission {submission_id} still {submission.status}")
        time.sleep(0.2)


# --- the app served as scripts/run serves it (academy.serve), and HTTP clients from their own addresses

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
        self.cookies: dict[str, str] = {}  # what the server set: the session cookie, the device cookie

    @property
    def cookie(self) -> str | None:
        """The session cookie, "session=...": what a thief copies (set it to replay one)."""
        return f"session={self.cookies['session']}" if "session" in self.cookies else None

    @cookie.setter
    def cookie(self, value: str | None) -> None:
        self.cookies.pop("session", None)
        if value:
            self.cookies["session"] = value.split("=", 1)[1]

    def request(self, method: str, url: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> Response:
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60,
                                                source_address=(self.address, 0))
        sent = dict(headers or {})
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
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
            name, _, value = header.split(";", 1)[0].partition("=")
            gone = not value or "max-age=0" in header.lower() or "expires=thu, 01 jan 1970" in header.lower()
            if gone:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = value
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

    def signup(self, email: str, password: str = "password123", name: str | None = None) -> Response:
        return self.form("/auth/signup", {"email": email, "password": password,
                                          "name": name if name is not None else name_of(email)})

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


class UserRows:
    """A live server's `users` table as its administrator reaches it: straight through the database (on
    SQLite as the sqlite3 shell does, foreign keys off)."""

    def __init__(self, url: str):
        from sqlalchemy import create_engine

        self.engine = create_engine(url)

    def id_of(self, email: str) -> int | None:
        from sqlalchemy import text

        with self.engine.connect() as connection:
            return connection.execute(text("SELECT id FROM users WHERE email = :e"), {"e": email}).scalar()

    def newest_id(self) -> int:
        from sqlalchemy import text

        with self.engine.connect() as connection:
            return connection.execute(text("SELECT max(id) FROM users")).scalar()

    def exists(self, user_id: int) -> bool:
        from sqlalchemy import text

        with self.engine.connect() as connection:
            return connection.execute(text("SELECT count(*) FROM users WHERE id = :id"), {"id": user_id}).scalar() > 0

    def delete(self, user_id: int) -> None:
        from sqlalchemy import text

        with self.engine.begin() as connection:
            connection.execute(text("DELETE FROM users WHERE id = :id"), {"id": user_id})

    def hand_out_again(self, user_id: int) -> None:
        """The next user made gets `user_id` again, as the database would if ids were reused (SQLite without
        AUTOINCREMENT hands out the newest deleted id by itself; a sequence reset, a restored dump ...)."""
        from sqlalchemy import text
        from sqlalchemy.exc import OperationalError

        with self.engine.begin() as connection:
            if self.engine.dialect.name == "postgresql":
                connection.execute(text("SELECT setval('users_id_seq', :id, false)"), {"id": user_id})
                return
            try:
                connection.execute(text("DELETE FROM sqlite_sequence WHERE name = 'users'"))
                connection.execute(text("INSERT INTO sqlite_sequence (name, seq) VALUES ('users', :seq)"),
                                   {"seq": user_id - 1})
            except OperationalError:  # no AUTOINCREMENT table at all: the newest deleted id comes back anyway
                pass

    def dispose(self) -> None:
        self.engine.dispose()


# --- PostgreSQL

def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class PostgresServer:
    """initdb + postgres as the `postgres` system user (PostgreSQL refuses to run as root), trust auth
    on 127.0.0.1 only; the cluster is deleted afterwards."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        self.port = free_port()
        # Not under pytest's tmp_path: its parents are root-only and the postgres user must enter.
        self.folder = Path(tempfile.mkdtemp(prefix="dla-pg-"))
        self.process: subprocess.Popen | None = None

    def url(self, database: str = "academy") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def _as_postgres(self, *command: str) -> list[str]:
        return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *command] \
            if os.geteuid() == 0 else list(command)

    def start(self) -> PostgresServer:
        data = self.folder / "data"
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
        subprocess.run(self._as_postgres(str(self.bin / "initdb"), "-D", str(data), "-U", "postgres",
                                         "--auth=trust", "--no-sync", "-E", "UTF8"),
                       check=True, capture_output=True, timeout=120)
        self.process = subprocess.Popen(
            self._as_postgres(str(self.bin / "postgres"), "-D", str(data), "-p", str(self.port),
                              "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.folder}",
                              "-c", "fsync=off", "-c", "max_connections=200"),
            stdout=open(self.folder / "postgres.log", "ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)]
                             ).returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("postgres did not start: " + (self.folder / "postgres.log").read_text())
            time.sleep(0.1)
        subprocess.run([str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                        "academy"], check=True, timeout=30)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # "smart" shutdown
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


# --- Docker grading containers

# Warm pools the whole test session shares (tests/conftest.py's warm_sandbox): their containers are not left
# behind by any one test.
SHARED_POOLS: list[Any] = []


def grading_containers() -> list[str]:
    """Every grading container the engine knows, running or not, but those of the session's shared pools."""
    from sandbox.docker import CONTAINER_LABEL

    out = subprocess.run(["docker", "ps", "-a", "--filter", f"label={CONTAINER_LABEL}", "--format", "{{.Names}}"],
                         capture_output=True, text=True, check=True).stdout
    shared = {name for pool in SHARED_POOLS for name in pool.members()}
    return [name for name in out.split() if name not in shared]


def wait_no_grading_containers(timeout: float = 20) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := grading_containers()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


# --- the browser tests' instructor

INSTRUCTOR = ("teacher@example.org", "teacher-password")


# --- a result as the grader stored it before schema_version 2 (grader.core.result.upgrade_result reads it)

def schema_1_result() -> dict[str, Any]:
    """An amp-step result in the stored shape of schema 1: no per-check status, a hint string, device
    "unknown", the sandbox's notes among the learner's. Two of six checks fail."""
    checks = [{"id": check_id, "title": title, "passed": passed, "message": "" if passed else message,
               "hint": "" if passed else hint, "line": None if passed else line}
              for check_id, title, passed, message, hint, line in [
                  ("runs", "Your step runs", True, "", "", None),
                  ("autocast-scope", "Forward pass under autocast", True, "", "", None),
                  ("scaled-backward", "Backward on the scaled loss", False, "backward() was called on the raw loss.",
                   "Call scaler.scale(loss).backward().", 4),
                  ("step-update-order", "scaler.step then scaler.update", True, "", "", None),
                  ("grads-cleared", "Gradients cleared", False, "The gradients were never cleared.",
                   "Call optimizer.zero_grad() first.", 2),
                  ("matches-reference", "Matches the reference step", True, "", "", None)]]
    return {"exercise": EXERCISE, "title": "Write one AMP training step", "passed": False, "score": 0.6667,
            "status": "failed", "checks": checks, "error": None, "device": "unknown", "sandbox": "local",
            "duration_s": 2.5, "output": "", "output_truncated": False,
            "notes": ["Graded by the local sandbox (namespaces)."], "seed": 7}


# --- the tutor's embedded model server (academy/tutor/embedded.py), the real one

class TutorModelServer:
    """`transformers serve` with the embedded SmolLM2 model on one CPU thread, offline; one per test session
    (tests/conftest.py: tutor_model), since loading it takes most of a minute on a busy machine."""

    def __init__(self, folder: Path):
        from academy.tutor import embedded

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = folder / "tutor-model.log"
        env = embedded.environment(threads=1)
        env["HF_HOME"] = str(folder / "hf-home")  # an empty cache: the model can only come from the package
        self.process = subprocess.Popen(embedded.command(self.port), env=env, stdout=open(self.log_path, "wb"),
                                        stderr=subprocess.STDOUT, start_new_session=True)

    @classmethod
    def running(cls, port: int) -> TutorModelServer:
        """One already started (`python -m academy.tutor.embedded --port PORT`), which this one never stops."""
        server = cls.__new__(cls)
        server.port, server.url, server.process = port, f"http://127.0.0.1:{port}/v1", None
        server.log_path = Path(os.devnull)
        return server

    def wait_ready(self, timeout: float = 300) -> TutorModelServer:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=5) as answer:
                    if b'"loaded"' in answer.read():
                        return self
            except OSError:
                pass
            if (self.process is not None and self.process.poll() is not None) or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the tutor's model server did not start:\n{self.logs()}")
            time.sleep(0.5)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop_group(self.process, timeout=10)


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A port whose server accepts connections and never answers: a model server that hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()
