"""The server's shape: requests/s and page latency of a plain page (the home page, `GET /`), gunicorn's gthread
worker (what `scripts/run` ran before) against academy/serve.py (waitress, what it runs now), same threads.

    .venv/bin/python benchmarks/server_shape.py [--seconds 4] [--rounds 5] [--clients 8] [--shapes run,compose]

Shapes, each on its own fresh instance (SQLite, no tutor, no warm pool: pages only):

    run       1 process x 8 threads: `scripts/run`'s server, before and now
    compose   4 processes x 4 threads: the compose image's web service, before and now (SQLite here)

Both servers of a shape run at once; after a warm-up they take turns, `--rounds` times: `--clients` threads, each
with one keep-alive connection, ask for the page back to back for `--seconds`. The table has the median, least and
most requests/s of the rounds and the latency percentiles of all answers. Clients and server share this
machine's cores, so compare rows of one run, not numbers across machines.
"""
from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from api_latency import REPO, free_port, percentile, print_table

VENV_BIN = Path(sys.executable).parent
SHAPES = {"run": (1, 8), "compose": (4, 4)}


def command(server: str, processes: int, threads: int, port: int) -> list[str]:
    if server == "gunicorn":
        return [str(VENV_BIN / "gunicorn"), "--workers", str(processes), "--threads", str(threads), "--bind",
                f"127.0.0.1:{port}", "--access-logfile", "-", "--graceful-timeout", "1",
                "-c", "python:academy.gunicorn_hooks", "academy:create_app()"]
    return [sys.executable, "-m", "academy.serve", "--bind", f"127.0.0.1:{port}", "--processes", str(processes),
            "--threads", str(threads), "--graceful-timeout", "1"]


def start(server: str, processes: int, threads: int, folder: Path) -> tuple[subprocess.Popen, int]:
    env = {**os.environ, "DLA_INSTANCE": str(folder / "instance"), "DLA_SANDBOX": "local", "DLA_WARM_POOL": "0",
           "DLA_TUTOR": "0", "PYTHONPATH": f"{REPO}:{REPO / 'platform'}"}
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_EXERCISES", "SECRET_KEY"):
        env.pop(name, None)
    subprocess.run([str(VENV_BIN / "flask"), "--app", "academy", "init-db"], env=env, cwd=REPO, check=True,
                   capture_output=True)
    port = free_port()
    process = subprocess.Popen(command(server, processes, threads, port), env=env, cwd=REPO,
                               stdout=open(folder / "server.log", "wb"), stderr=subprocess.STDOUT,
                               start_new_session=True)
    deadline = time.monotonic() + 120
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", "/")
            if connection.getresponse().status == 200:
                return process, port
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError((folder / "server.log").read_text()[-3000:])
        time.sleep(0.2)


def load(port: int, clients: int, seconds: float) -> list[float]:
    """Back-to-back `GET /` from `clients` keep-alive connections; each answer's seconds."""
    timings: list[list[float]] = [[] for _ in range(clients)]
    stop = time.monotonic() + seconds

    def client(mine: list[float]) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.monotonic() < stop:
            started = time.perf_counter()
            connection.request("GET", "/")
            answer = connection.getresponse()
            answer.read()
            if answer.status != 200:
                raise RuntimeError(f"GET / answered {answer.status}")
            mine.append(time.perf_counter() - started)
        connection.close()

    threads = [threading.Thread(target=client, args=(mine,)) for mine in timings]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [t for mine in timings for t in mine]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4, help="seconds of load per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per server, the two servers taking turns")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--shapes", default="run,compose")
    args = parser.parse_args()
    servers = [("gunicorn", "gunicorn gthread (before)"), ("serve", "academy.serve: waitress (now)")]
    rows = []
    for shape in args.shapes.split(","):
        processes, threads = SHAPES[shape]
        with tempfile.TemporaryDirectory(prefix="dla-shape-") as folder:
            running = []
            try:
                for server, _label in servers:
                    (Path(folder) / server).mkdir()
                    running.append(start(server, processes, threads, Path(folder) / server))
                rates: list[list[float]] = [[] for _ in servers]
                timings: list[list[float]] = [[] for _ in servers]
                for _process, port in running:  # warm-up: templates, the course, every process's first pages
                    load(port, args.clients, 2)
                for _round in range(args.rounds):  # taking turns, so a busier moment of the machine hits both
                    for number, (_process, port) in enumerate(running):
                        taken = load(port, args.clients, args.seconds)
                        rates[number].append(len(taken) / args.seconds)
                        timings[number] += taken
            finally:
                for process, _port in running:
                    process.terminate()
                    process.wait(timeout=30)
        for number, (_server, label) in enumerate(servers):
            rows.append([f"{shape} ({processes}x{threads})", label, len(timings[number]),
                         statistics.median(rates[number]), min(rates[number]), max(rates[number]),
                         1000 * percentile(timings[number], 50), 1000 * percentile(timings[number], 95),
                         1000 * percentile(timings[number], 99)])
    print(f"\n`GET /` (home page), {args.clients} keep-alive clients back to back, {args.rounds} rounds of "
          f"{args.seconds:g} s per server taking turns, SQLite, {os.cpu_count()} cores shared by clients and server\n")
    print_table(["shape", "server", "requests", "req/s (median)", "min", "max", "p50 ms", "p95 ms", "p99 ms"], rows)


if __name__ == "__main__":
    main()
