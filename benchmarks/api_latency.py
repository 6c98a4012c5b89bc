"""Submit-to-verdict latency through the HTTP API, for each way of grading, side by side in one run.

    .venv/bin/python benchmarks/api_latency.py [--runs 10] [--modes local-warm,docker-warm,local-cold,...]

Each mode serves a fresh app (its own SQLite instance folder) over HTTP on 127.0.0.1 and submits the
lesson-1 reference solution (mixed-precision/amp-step) `--runs` times, one after another, polling
GET /api/submissions/ID every 20 ms until the verdict is stored:

    local-warm      job threads in the web process, local sandbox, warm pool of 2 fork-server children
                    (the single-machine default)
    docker-warm     job threads in the web process, docker sandbox, warm pool of 2 containers
    local-cold      job threads in the web process, a fresh `python -m grader.harness` per submission
    docker-cold     job threads in the web process, a fresh container per submission
    rq              RQ on a private redis-server, one `python -m academy worker`, local warm pool
    rq-docker-warm  the same worker with the docker sandbox and a warm pool of 2

All modes run at once and take turns, one submission each per round; each round also times the floor a
fresh grading process cannot beat, `python -c "import torch"`. Ratios are to that floor.
Run sandbox/build-images first (docker modes need a current grader image).
The other benchmarks import the helpers below.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parent.parent
EXERCISE = "mixed-precision/amp-step"
SOLUTION = (REPO / "exercises/mixed-precision/amp-step/solution.py").read_text()


# -- helpers shared by the benchmarks ------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [[f"{c:.3f}" if isinstance(c, float) else str(c) for c in row]
                                           for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(cells[0], widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells[1:]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")


class RedisProcess:
    """Debian's redis-server on a free loopback port, no persistence, in a temp dir."""

    def __init__(self) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="dla-bench-redis-"))
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server is not installed (apt-get install redis-server)")
        self.process = subprocess.Popen([binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
                                         str(self.folder), "--save", "", "--appendonly", "no"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


class Api:
    """A tiny HTTP client for the JSON API with a Bearer token."""

    def __init__(self, base: str, token: str):
        self.base, self.token = base, token

    def call(self, method: str, path: str, body: Any = None, timeout: float = 60) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def submit(self, code: str = SOLUTION) -> int:
        status, body = self.call("POST", "/api/submissions", {"exercise": EXERCISE, "code": code})
        if status != 202:
            raise RuntimeError(f"submit answered {status}: {body}")
        return body["id"]

    def follow(self, submission_id: int) -> dict[str, Any]:
        """As static/lesson.js does: long-poll until the status is neither queued nor running."""
        known = "queued"
        while True:
            status, body = self.call("GET", f"/api/submissions/{submission_id}?wait=20&seen={known}")
            if status != 200:
                raise RuntimeError(f"GET answered {status}: {body}")
            if body["status"] not in ("queued", "running"):
                return body
            known = body["status"]

    def wait(self, submission_id: int, timeout: float = 600, poll_s: float = 0.02,
             workers: list[subprocess.Popen] | None = None) -> dict[str, Any]:
        """Poll until the verdict is stored; fail early when one of `workers` has exited."""
        deadline = time.monotonic() + timeout
        while True:
            status, body = self.call("GET", f"/api/submissions/{submission_id}")
            if status == 200 and body["status"] in ("done", "error"):
                return body
            for process in workers or []:
                if process.poll() is not None:
                    raise RuntimeError(f"worker {process.pid} exited ({process.returncode}); see its log")
            if time.monotonic() > deadline:
                raise RuntimeError(f"submission {submission_id} not graded within {timeout} s: {body}")
            time.sleep(poll_s)


def app_config(instance: Path, **extra: Any) -> dict[str, Any]:
    return {"INSTANCE_PATH": str(instance), "SECRET_KEY": "bench", "SUBMISSION_RATE": (100000, 60),
            "REQUEUE_ON_START": False, "CONTENT_RELOAD": False, **extra}


def make_tokens(app: Any, count: int) -> list[str]:
    """`count` learner accounts with an API token each."""
    from academy.data.db import get_session
    from academy.web.auth import create_account
    from academy.web.security import new_api_token

    tokens = []
    with app.app_context():
        for i in range(count):
            tokens.append(new_api_token(create_account(f"learner{i}@bench.example", "password123"), "bench"))
        get_session().commit()
    return tokens


class LiveServer:
    """The Flask app served over HTTP on 127.0.0.1 by werkzeug's threaded server, in this process."""

    def __init__(self, app: Any):
        import logging

        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request

        self.port = free_port()
        self.server = make_server("127.0.0.1", self.port, app, threaded=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()


def start_worker(instance: Path, redis_url: str, log: Path, sandbox: str = "local",
                 extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    env = {**os.environ, "REDIS_URL": redis_url, "DLA_INSTANCE": str(instance), "DLA_SANDBOX": sandbox,
           "SECRET_KEY": "bench", "DLA_WORKER_LOG": "WARNING", **(extra_env or {})}
    env.pop("DATABASE_URL", None)
    return subprocess.Popen([sys.executable, "-m", "academy", "worker"], env=env, cwd=REPO,
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)


def stop_worker(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def docker_ready() -> tuple[bool, str]:
    from grader.host.sandboxes import docker_sandbox

    return docker_sandbox().available()  # the grader image for the course on disk, current or not


# -- this benchmark ------------------------------------------------------------------------------------

def _in_process(sandbox: str, warm: int):  # noqa: ANN202
    @contextlib.contextmanager
    def setup(folder: Path) -> Iterator[Api]:
        from academy import create_app, jobs
        from academy.instance import init_instance
        from academy.jobs import grading_sandbox

        app = create_app(app_config(folder / "instance", SANDBOX=sandbox, GRADING_WORKERS=2, WARM_POOL=warm))
        init_instance(app)  # what `flask --app academy init-db` does
        server = LiveServer(app)
        try:
            api = Api(server.base, make_tokens(app, 1)[0])
            pool = getattr(grading_sandbox(app).get(), "pool", None)  # started before the clock runs
            if pool is not None:
                pool.wait_warm()
            yield api
        finally:
            server.stop()
            jobs.shutdown(app)
    return setup


def floor_s() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - started


def _through_rq(sandbox: str, pool_size: int):  # noqa: ANN202
    @contextlib.contextmanager
    def setup(folder: Path) -> Iterator[Api]:
        from academy import create_app
        from academy.instance import init_instance

        redis = RedisProcess()
        app = create_app(app_config(folder / "instance", SANDBOX=sandbox, REDIS_URL=redis.url))
        init_instance(app)
        server = LiveServer(app)
        worker = start_worker(folder / "instance", redis.url, folder / "worker.log", sandbox=sandbox,
                              extra_env={"DLA_WARM_POOL": str(pool_size)})
        try:
            api = Api(server.base, make_tokens(app, 1)[0])
            try:  # the worker process has started, imported everything, filled its pool
                api.wait(api.submit(), workers=[worker])
            except RuntimeError as exc:
                raise RuntimeError(f"{exc}:\n{(folder / 'worker.log').read_text()[-1500:]}") from None
            yield api
        finally:
            stop_worker(worker)
            server.stop()
            redis.stop()
    return setup


# (key, description, setup, needs docker)
MODES = {
    "local-warm": ("web process threads, local warm pool of 2", _in_process("local", 2), False),
    "docker-warm": ("web process threads, docker warm pool of 2", _in_process("docker", 2), True),
    "local-cold": ("web process threads, a fresh local process each", _in_process("local", 0), False),
    "docker-cold": ("web process threads, a cold container each", _in_process("docker", 0), True),
    "rq": ("RQ, 1 worker process, local warm pool of 2", _through_rq("local", 2), False),
    "rq-docker-warm": ("RQ, 1 worker process, docker warm pool of 2", _through_rq("docker", 2), True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    keys = args.modes.split(",")
    skipped = {}
    if any(key.startswith(("docker", "rq-docker")) for key in keys) and not (ready := docker_ready())[0]:
        skipped = {key: ready[1] for key in keys if "docker" in key}
    samples: dict[str, list[float]] = {key: [] for key in keys if key not in skipped}
    floor: list[float] = []
    with tempfile.TemporaryDirectory(prefix="dla-bench-") as folder, contextlib.ExitStack() as stack:
        apis = {}
        for key in samples:
            (Path(folder) / key).mkdir()
            apis[key] = stack.enter_context(MODES[key][1](Path(folder) / key))
        # Interleaved (one submission per mode per round): load from other processes on this machine
        # hits every mode alike, so the ratios hold even when the absolute times wander.
        for round_number in range(args.runs):
            floor.append(floor_s())
            for key, api in apis.items():
                started = time.perf_counter()
                result = api.wait(api.submit())
                samples[key].append(time.perf_counter() - started)
                if result["status"] != "done" or not result["result"]["passed"]:
                    raise RuntimeError(f"{key}: unexpected verdict {result}")
            print(f"  round {round_number + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in samples.items()),
                  file=sys.stderr, flush=True)
    base = statistics.median(floor)
    rows = [["floor", "python -c 'import torch'", len(floor), base, percentile(floor, 95), "1.00x", ""]]
    for key in keys:
        if key in skipped:
            rows.append([key, MODES[key][0], 0, "-", "-", "-", f"skipped: {skipped[key]}"])
            continue
        p50 = statistics.median(samples[key])
        rows.append([key, MODES[key][0], len(samples[key]), p50, percentile(samples[key], 95), f"{p50 / base:.2f}x",
                     ""])
    print(f"\nSubmit-to-verdict latency through the HTTP API ({EXERCISE} solution, seconds; "
          f"{args.runs} rounds, modes interleaved)\n")
    print_table(["mode", "graded by", "n", "p50 s", "p95 s", "p50 vs floor", "note"], rows)


if __name__ == "__main__":
    main()
