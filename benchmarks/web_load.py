"""Web load: concurrent simulated learners paging through lessons and polling results, against gunicorn.

    .venv/bin/python benchmarks/web_load.py [--learners 200] [--rounds 2] \
        [--configs sqlite-sync,sqlite-gthread,pg-gthread]

Each learner is a thread with its own account and session cookie: it signs in (form + CSRF, like a
browser), then `--rounds` times pages through every step of lesson 1 and polls its stored submission
(GET /api/submissions/ID, twice) and its progress (GET /api/progress). All learners start together.
Reported per server configuration: p50/p95 latency of lesson pages and of polls, requests per second,
and the error count (any status other than 2xx/3xx, or a failed connection), which must be 0.

    sqlite-sync      SQLite (WAL), gunicorn 2 sync workers
    sqlite-gthread   SQLite (WAL), gunicorn 4 workers x 4 threads
    pg-gthread       PostgreSQL (Debian's package, a throwaway cluster), gunicorn 4 workers x 4 threads

Everything runs on this machine: the load generator competes with the server for the same CPUs, so
compare the rows of one run (ratios), not absolute numbers across machines.
"""
from __future__ import annotations

import argparse
import glob
import http.client
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

from api_latency import EXERCISE, REPO, SOLUTION, free_port, percentile, print_table

CONFIGS = {
    "sqlite-sync": ("SQLite, gunicorn 2 sync workers", "sqlite", ["--workers", "2"]),
    "sqlite-gthread": ("SQLite, gunicorn 4 workers x 4 threads", "sqlite", ["--workers", "4", "--threads", "4"]),
    "pg-gthread": ("PostgreSQL, gunicorn 4 workers x 4 threads", "postgres", ["--workers", "4", "--threads", "4"]),
}
PASSWORD = "password123"


class Postgres:
    """A throwaway cluster of Debian's PostgreSQL on a free loopback port (run as the postgres user)."""

    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            raise SystemExit("PostgreSQL is not installed (apt-get install postgresql)")
        self.bin = Path(found[-1]).parent
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="dla-bench-pg-"))
        prefix = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"] if os.geteuid() == 0 else []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
        subprocess.run([*prefix, str(self.bin / "initdb"), "-D", str(self.folder / "data"), "-U", "postgres",
                        "--auth=trust", "--no-sync"], check=True, capture_output=True)
        self.process = subprocess.Popen(
            [*prefix, str(self.bin / "postgres"), "-D", str(self.folder / "data"), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.folder}",
             "-c", "max_connections=300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)]
                             ).returncode != 0:
            time.sleep(0.1)
        subprocess.run([str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                        "academy"], check=True)
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/academy"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)


def prepare(instance: Path, database_url: str, learners: int, result_json: str) -> dict[str, int]:
    """Learner accounts, each with one graded submission; returns email -> submission id."""
    from academy import create_app
    from academy.data.db import get_session
    from academy.data.models import Submission, utcnow
    from academy.instance import init_instance
    from academy.web.auth import create_account

    app = create_app({"INSTANCE_PATH": str(instance), "DATABASE_URL": database_url, "SECRET_KEY": "bench",
                      "REQUEUE_ON_START": False})
    init_instance(app)  # what `flask --app academy init-db` does
    owned = {}
    with app.app_context():
        db = get_session()
        for i in range(learners):
            user = create_account(f"learner{i}@bench.example", PASSWORD)
            submission = Submission(user=user, exercise_id=EXERCISE, code=SOLUTION, status="done", passed=True,
                                    result_json=result_json, started_at=utcnow(), finished_at=utcnow())
            db.add(submission)
            db.flush()
            owned[user.email] = submission.id
        db.commit()
    app.extensions["academy.engine"].dispose()
    return owned


def start_gunicorn(instance: Path, database_url: str, options: list[str], port: int, log: Path) -> subprocess.Popen:
    env = {**os.environ, "DLA_INSTANCE": str(instance), "DATABASE_URL": database_url, "SECRET_KEY": "bench",
           "DLA_SANDBOX": "local", "DLA_CONTENT_RELOAD": "0"}
    env.pop("REDIS_URL", None)
    process = subprocess.Popen([str(Path(sys.executable).with_name("gunicorn")), *options, "--bind",
                                f"127.0.0.1:{port}", "--backlog", "2048", "academy:create_app()"],
                               env=env, cwd=REPO, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/auth/signin")
            if connection.getresponse().status == 200:
                return process
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("gunicorn did not start: " + log.read_text()[-2000:])
        time.sleep(0.2)


class Learner:
    """One browser: a session cookie (kept by hand: http.cookiejar never sends Secure cookies over http)."""

    def __init__(self, port: int, email: str, submission_id: int, pages: list[str], record: Any):
        self.port, self.email, self.submission_id, self.pages, self.record = port, email, submission_id, pages, record
        self.cookies: dict[str, str] = {}

    def request(self, kind: str, method: str, path: str, body: dict[str, str] | None = None) -> str:
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        data = None
        if body is not None:
            data = urllib.parse.urlencode(body)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        began = time.perf_counter()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            text = response.read().decode("utf-8", "replace")
            connection.close()
        except OSError as exc:
            self.record(kind, time.perf_counter() - began, f"{type(exc).__name__}: {exc}")
            return ""
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, value = header.split(";")[0].partition("=")
            self.cookies[name.strip()] = value
        ok = 200 <= response.status < 400
        self.record(kind, time.perf_counter() - began, None if ok else f"{method} {path}: {response.status}")
        return text

    def run(self, rounds: int, start: threading.Barrier) -> None:
        start.wait()
        page = self.request("signin", "GET", "/auth/signin")
        token = re.search(r'name="csrf_token" value="([^"]+)"', page)
        self.request("signin", "POST", "/auth/signin",
                     {"csrf_token": token.group(1) if token else "", "email": self.email, "password": PASSWORD})
        for _ in range(rounds):
            for path in self.pages:
                self.request("page", "GET", path)
            for _ in range(2):
                self.request("poll", "GET", f"/api/submissions/{self.submission_id}")
            self.request("poll", "GET", "/api/progress")


def lesson_pages() -> list[str]:
    from grader.core.course import load_course

    lesson = load_course().lessons[0]
    return [f"/lessons/{lesson.id}/{n}" for n in range(1, len(lesson.steps) + 1)]


def run_config(key: str, learners: int, rounds: int, result_json: str) -> dict[str, Any]:
    label, database, options = CONFIGS[key]
    with tempfile.TemporaryDirectory(prefix="dla-bench-web-") as folder:
        instance = Path(folder) / "instance"
        postgres = Postgres() if database == "postgres" else None
        url = postgres.url if postgres else f"sqlite:///{instance / 'academy.sqlite'}"
        server = None
        try:
            owned = prepare(instance, url, learners, result_json)
            port = free_port()
            server = start_gunicorn(instance, url, options, port, Path(folder) / "gunicorn.log")
            samples: dict[str, list[float]] = {"signin": [], "page": [], "poll": []}
            errors: list[str] = []
            lock = threading.Lock()

            def record(kind: str, seconds: float, error: str | None) -> None:
                with lock:
                    samples[kind].append(seconds)
                    if error:
                        errors.append(error)

            pages = lesson_pages()
            start = threading.Barrier(learners)
            crowd = [threading.Thread(target=Learner(port, email, sid, pages, record).run, args=(rounds, start))
                     for email, sid in owned.items()]
            began = time.perf_counter()
            for thread in crowd:
                thread.start()
            for thread in crowd:
                thread.join()
            elapsed = time.perf_counter() - began
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
            if postgres:
                postgres.stop()
    total = sum(len(v) for v in samples.values())
    return {"label": label, "samples": samples, "errors": errors, "elapsed": elapsed, "requests": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    args = parser.parse_args()
    from grader.host.grading import run_submission

    result = run_submission(EXERCISE, SOLUTION, sandbox="local")  # one real verdict, stored for every learner
    result_json = json.dumps(result)
    rows, first = [], None
    for key in args.configs.split(","):
        outcome = run_config(key, args.learners, args.rounds, result_json)
        pages, polls = outcome["samples"]["page"], outcome["samples"]["poll"]
        p50 = percentile(pages, 50)
        first = first or p50
        rows.append([key, outcome["label"], outcome["requests"], len(outcome["errors"]),
                     outcome["requests"] / outcome["elapsed"], p50 * 1000, percentile(pages, 95) * 1000,
                     f"{p50 / first:.2f}x", percentile(polls, 50) * 1000, percentile(polls, 95) * 1000,
                     percentile(outcome["samples"]["signin"], 95) * 1000])
        if outcome["errors"]:
            print(f"  {key}: first errors: {outcome['errors'][:5]}", file=sys.stderr)
        print(f"  {key}: {outcome['requests']} requests in {outcome['elapsed']:.1f} s", file=sys.stderr, flush=True)
    print(f"\n{args.learners} concurrent learners x {args.rounds} rounds of lesson 1 "
          f"({len(lesson_pages())} pages) + 3 polls, gunicorn on 127.0.0.1\n")
    print_table(["config", "server", "requests", "errors", "req/s", "page p50 ms", "page p95 ms",
                 "page p50 vs first", "poll p50 ms", "poll p95 ms", "sign-in p95 ms"], rows)


if __name__ == "__main__":
    main()
