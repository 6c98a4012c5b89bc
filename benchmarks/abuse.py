"""Abuse: learners' verdict latency with and without a hostile client, and sign-in with and without throttling.

    .venv/bin/python benchmarks/abuse.py [--learners 10] [--seconds 75] [--signins 40]

Fairness: the platform as `scripts/run` serves it (gunicorn, one process, 8 threads, 2 grading threads, local
sandbox, warm pool of 2), `--learners` learners at a human pace (an account each, each from its own
loopback address 127.0.4.N: think 5-10 s, submit the lesson-1 solution, wait for the verdict) for
`--seconds`, twice on fresh servers: alone, then with one hostile client (127.0.4.200) that mints guests
and submits code that sleeps at import (holding a grader until the exercise's time limit) as fast as the
limits let it. Reported: the learners' submit-to-verdict p50/p95, and what the hostile client got through.
Target: p95 with the abuser at most 2x without.

Sign-in: `--signins` sign-ins (right password, wrong password, unknown email, each from its own address)
against servers without Flask-Limiter (RATELIMIT_ENABLED = False), with its memory storage (the default) and
with its Redis storage (a private redis-server). The wrong-password delays (academy/web/backoff.py) count every
attempt in the database in all three, with so many free failures that no delay starts.

Everything listens on 127.0.0.1 and every loop is bounded; compare rows of one run (ratios).
"""
from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the live-server helpers of the HTTP tests

from api_latency import RedisProcess, percentile, print_table  # noqa: E402

from tests.support.clients import Client  # noqa: E402
from tests.support.paths import SOLUTION  # noqa: E402
from tests.support.servers import SLEEPER, LiveServer  # noqa: E402

SERVER_ENV = {"DLA_WARM_POOL": "2", "DLA_GRADING_WORKERS": "2"}


def learner(server: LiveServer, number: int, until: float, latencies: list[float], errors: list[str]) -> None:
    client = Client(server, f"127.0.4.{number + 1}")
    response = client.signup(f"learner{number}@bench.example")
    if response.status != 302:
        errors.append(f"sign-up {response.status}")
        return
    rng = random.Random(number)
    time.sleep(rng.uniform(0, 5))  # learners do not start in step
    while time.monotonic() < until:
        began = time.perf_counter()
        response = client.submit(SOLUTION)
        if response.status != 202:
            errors.append(f"submit {response.status}: {response.text[:100]}")
            time.sleep(1)
            continue
        state = client.wait(response.json()["id"], timeout=300)
        latencies.append(time.perf_counter() - began)
        if state["status"] != "done" or not state["result"]["passed"]:
            errors.append(f"verdict {state['status']}")
        time.sleep(rng.uniform(5, 10))


def abuser(server: LiveServer, until: float, counts: dict[str, int], stop: threading.Event) -> None:
    """One client: a fresh guest for every submission (each guest may have one waiting), as fast as the
    limits answer; on 429 it waits what Retry-After says (at most 5 s, to keep trying)."""
    while time.monotonic() < until and not stop.is_set():
        guest = Client(server, "127.0.4.200")
        started = guest.form("/auth/guest")
        if started.status != 302:
            counts["guests refused"] += 1
            time.sleep(min(5, int(started.headers.get("Retry-After", "1"))))
            continue
        counts["guests"] += 1
        response = guest.submit(SLEEPER)
        key = "accepted" if response.status == 202 else "refused"
        counts[key] += 1
        if response.status != 202:
            time.sleep(min(5, int(response.headers.get("Retry-After", "1"))))


def fairness_round(folder: Path, learners: int, seconds: float, hostile: bool) -> dict:
    folder.mkdir(parents=True)
    server = LiveServer(folder, SERVER_ENV).start()
    try:
        # Warm-up, not counted: the first verdict pays for starting the warm pool.
        warm = Client(server, "127.0.4.250").guest()
        warm.wait(warm.submit(SOLUTION).json()["id"], timeout=300)
        latencies: list[float] = []
        errors: list[str] = []
        counts: dict = {"guests": 0, "guests refused": 0, "accepted": 0, "refused": 0}
        stop = threading.Event()
        until = time.monotonic() + seconds
        threads = [threading.Thread(target=learner, args=(server, n, until, latencies, errors))
                   for n in range(learners)]
        if hostile:
            threads.append(threading.Thread(target=abuser, args=(server, until, counts, stop)))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        database = sqlite3.connect(server.instance / "academy.sqlite")
        # How much grading the hostile jobs got: graded ones, and the grader-seconds they held.
        graded, held = database.execute(
            "SELECT count(*), coalesce(sum((julianday(finished_at) - julianday(started_at)) * 86400), 0) "
            "FROM submissions WHERE code = ? AND finished_at IS NOT NULL", (SLEEPER,)).fetchone()
        database.close()
        counts.update(graded=graded, held_s=held)
        return {"latencies": latencies, "errors": errors, "counts": counts}
    finally:
        server.stop()


def signin_round(folder: Path, count: int, config: str) -> dict[str, float]:
    (folder / "instance").mkdir(parents=True)
    (folder / "instance" / "config.py").write_text(config + "SIGNIN_FREE_FAILURES = 10**9\n")
    server = LiveServer(folder, {}).start()
    try:
        Client(server, "127.0.5.1").signup("known@bench.example", "the-password")
        samples: dict[str, list[float]] = {"right": [], "wrong": [], "unknown": []}
        for n in range(count):
            for kind, (email, password) in {"right": ("known@bench.example", "the-password"),
                                            "wrong": ("known@bench.example", f"guess-{n}"),
                                            "unknown": (f"nobody{n}@bench.example", "guess")}.items():
                client = Client(server, f"127.0.{6 + n // 200}.{n % 200 + 1}")
                token = client.csrf()  # not timed: what a browser has already when it posts the form
                began = time.perf_counter()
                response = client.form("/auth/signin", {"csrf_token": token, "email": email, "password": password},
                                       csrf=False)
                samples[kind].append(time.perf_counter() - began)
                assert response.status == (302 if kind == "right" else 401), (kind, response.status)
        return {kind: statistics.median(values) * 1000 for kind, values in samples.items()}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=75)
    parser.add_argument("--signins", type=int, default=40)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="dla-bench-abuse-"))
    try:
        rounds = {}
        for hostile in (False, True):
            name = "with abuser" if hostile else "alone"
            rounds[name] = fairness_round(folder / name.replace(" ", "-"), args.learners, args.seconds, hostile)
            print(f"  fairness {name}: {len(rounds[name]['latencies'])} verdicts, errors {rounds[name]['errors'][:3]}, "
                  f"hostile {rounds[name]['counts']}", file=sys.stderr, flush=True)
        base_p95 = percentile(rounds["alone"]["latencies"], 95)
        rows = []
        for name, outcome in rounds.items():
            values, counts = outcome["latencies"], outcome["counts"]
            hostile = (f"{counts['guests']} guests ({counts['guests refused']} refused), "
                       f"{counts['accepted']} sleepers accepted ({counts['refused']} refused), "
                       f"{counts['graded']} graded, holding a grader {counts['held_s']:.0f} s"
                       if name == "with abuser" else "none")
            rows.append([name, hostile, len(values), len(outcome["errors"]), percentile(values, 50),
                         percentile(values, 95), f"{percentile(values, 95) / base_p95:.2f}x"])
        print(f"\n{args.learners} learners at a human pace for {args.seconds:.0f} s (lesson-1 solution), gunicorn "
              "1 x 8 threads, 2 grading threads, local warm pool of 2\n")
        print_table(["learners", "hostile client", "verdicts", "errors", "p50 s", "p95 s", "p95 vs alone"], rows)

        redis = RedisProcess()
        try:
            configs = {"no throttling": "RATELIMIT_ENABLED = False\n",
                       "Flask-Limiter, memory": "",
                       "Flask-Limiter, Redis": f"RATELIMIT_STORAGE_URI = 'redis://127.0.0.1:{redis.port}/0'\n"}
            rows, first = [], None
            for name, config in configs.items():
                medians = signin_round(folder / f"signin-{len(rows)}", args.signins, config)
                first = first or medians["right"]
                rows.append([name, args.signins, medians["right"], medians["wrong"], medians["unknown"],
                             f"{medians['right'] / first:.2f}x"])
                print(f"  sign-in {name}: {medians}", file=sys.stderr, flush=True)
        finally:
            redis.stop()
        print(f"\nSign-in POST, median ms ({args.signins} each, every one from its own address)\n")
        print_table(["limits", "n", "right password", "wrong password", "unknown email", "right vs none"], rows)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
