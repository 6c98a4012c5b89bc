"""Throughput: a burst of submissions from concurrent clients, graded in-process or by RQ workers.

    .venv/bin/python benchmarks/throughput.py [--count 100] [--clients 20] \
        [--modes inprocess,rq,rq-docker-warm] [--workers 2]

Each mode serves a fresh app over HTTP on 127.0.0.1; `--clients` threads submit `--count` copies of the
lesson-1 solution as fast as they can, each from an account of its own (a learner may have one submission
waiting at a time, so a client holds count/clients accounts), then the run waits until every
verdict is stored. Reported: verdicts per minute (first submit to last verdict), the POST latency
(what a learner waits before seeing "queued"), and the database's own count of stored / done rows,
which must equal --count (nothing lost).

    inprocess  the single-machine default: job threads in the web process (--workers threads), local sandbox
    rq         RQ on a private redis-server, --workers `python -m academy worker` processes, local sandbox
    rq-docker-warm  the same workers grading in docker sandbox containers, a warm pool of 2 per worker
                    (run sandbox/build-images first)
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

from api_latency import (
    Api,
    LiveServer,
    RedisProcess,
    app_config,
    make_tokens,
    percentile,
    print_table,
    start_worker,
    stop_worker,
)


def _inprocess(folder: Path, workers: int, accounts: int) -> Iterator[tuple[Any, list[Api]]]:
    from academy import create_app, jobs
    from academy.instance import init_instance

    app = create_app(app_config(folder / "instance", SANDBOX="local", GRADING_WORKERS=workers))
    init_instance(app)  # what `flask --app academy init-db` does
    server = LiveServer(app)
    try:
        yield app, [Api(server.base, token) for token in make_tokens(app, accounts)]
    finally:
        server.stop()
        jobs.shutdown(app)


def _rq(folder: Path, workers: int, accounts: int, sandbox: str = "local",
        pool_size: int = 0) -> Iterator[tuple[Any, list[Api]]]:
    from academy import create_app
    from academy.instance import init_instance

    redis = RedisProcess()
    app = create_app(app_config(folder / "instance", SANDBOX=sandbox, REDIS_URL=redis.url))
    init_instance(app)
    server = LiveServer(app)
    processes = [start_worker(folder / "instance", redis.url, folder / f"worker-{i}.log", sandbox=sandbox,
                              extra_env={"DLA_WARM_POOL": str(pool_size)}) for i in range(workers)]
    try:
        apis = [Api(server.base, token) for token in make_tokens(app, accounts)]
        # Warm-up: every worker process has started (one submission each, not counted).
        warm = [apis[i].submit() for i in range(workers)]
        for i, submission_id in enumerate(warm):
            apis[i].wait(submission_id, workers=processes)
        yield app, apis
    finally:
        for process in processes:
            stop_worker(process)
        server.stop()
        redis.stop()


MODES: dict[str, tuple[str, Callable[..., Iterator[tuple[Any, list[Api]]]]]] = {
    "inprocess": ("web process threads, local sandbox", _inprocess),
    "rq": ("RQ worker processes, local sandbox", _rq),
    "rq-docker-warm": ("RQ worker processes, docker + warm pool of 2 each",
                       lambda folder, workers, accounts: _rq(folder, workers, accounts, "docker", 2)),
}


def burst(apis: list[Api], count: int, clients: int) -> dict[str, Any]:
    """`count` submissions, one per account in `apis`, sent by `clients` threads."""
    post_latency: list[float] = []
    ids: list[int] = []
    lock = threading.Lock()
    groups = [apis[i:count:clients] for i in range(clients)]
    start = threading.Barrier(clients)

    def client(accounts: list[Api]) -> None:
        start.wait()
        for api in accounts:
            began = time.perf_counter()
            submission_id = api.submit()
            elapsed = time.perf_counter() - began
            with lock:
                post_latency.append(elapsed)
                ids.append(submission_id)

    began = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, groups))
    submitted = time.perf_counter() - began
    return {"ids": ids, "post": post_latency, "began": began, "submitted_s": submitted}


def wait_all(app: Any, ids: list[int], began: float, timeout: float) -> dict[str, Any]:
    from sqlalchemy import func, select

    from academy.data.db import get_session
    from academy.data.models import Submission

    deadline = time.monotonic() + timeout
    while True:
        with app.app_context():
            rows = dict(get_session().execute(select(Submission.status, func.count()).where(
                Submission.id.in_(ids)).group_by(Submission.status)).all())
        finished = rows.get("done", 0) + rows.get("error", 0)
        if finished == len(ids) or time.monotonic() > deadline:
            return {"elapsed": time.perf_counter() - began, "rows": rows, "stored": sum(rows.values())}
        time.sleep(0.25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2, help="grading threads or worker processes")
    parser.add_argument("--modes", default="inprocess,rq,rq-docker-warm")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    rows, first = [], None
    for key in args.modes.split(","):
        label, setup = MODES[key]
        with tempfile.TemporaryDirectory(prefix="dla-bench-") as folder:
            generator = setup(Path(folder), args.workers, args.count)
            app, apis = next(generator)
            try:
                sent = burst(apis, args.count, args.clients)
                done = wait_all(app, sent["ids"], sent["began"], args.timeout)
            finally:
                generator.close()
        per_minute = done["rows"].get("done", 0) / done["elapsed"] * 60
        first = first or per_minute
        rows.append([key, f"{label} x{args.workers}", done["stored"], done["rows"].get("done", 0),
                     done["rows"].get("error", 0), done["elapsed"], per_minute, f"{per_minute / first:.2f}x",
                     percentile(sent["post"], 50) * 1000, percentile(sent["post"], 95) * 1000])
        print(f"  {key}: {done}", file=sys.stderr, flush=True)
    print(f"\nBurst of {args.count} submissions from {args.clients} concurrent clients (lesson-1 solution)\n")
    print_table(["mode", "graded by", "stored", "done", "error", "all verdicts s", "verdicts/min",
                 "vs first", "POST p50 ms", "POST p95 ms"], rows)


if __name__ == "__main__":
    main()
