"""Two (or more) checkouts' warm verdicts side by side in one run: before and after a change.

    git worktree add /tmp/before <commit>
    .venv/bin/python benchmarks/warm_verdict_ab.py --tree before=/tmp/before --tree after=. [--runs 20]

Each checkout serves its own app in a process of its own, started in that checkout (its `academy`, `grader` and
`sandbox` packages, and so its grading processes' harness: `python -m grader.harness` finds the checkout first),
job threads in the web process, local sandbox, warm pool of 2, over HTTP on 127.0.0.1. Rounds take turns: each
round times `python -c "import torch"` (the floor) and one amp-step verdict per checkout, followed as the lesson page
does (long-poll `?wait=20&seen=STATUS`), from a warm pool. Printed: p50/p90 per checkout and the ratio to the floor.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from api_latency import Api, floor_s, percentile, print_table

# Runs in each checkout (its benchmarks/api_latency.py): an app served over HTTP; prints {"base", "token"}, then
# serves until its stdin closes.
SERVE = """
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "benchmarks")
from api_latency import LiveServer, app_config, make_tokens
from academy import create_app, jobs
from academy.instance import init_instance
from academy.jobs import grading_sandbox
folder = Path(tempfile.mkdtemp(prefix="dla-ab-"))
app = create_app(app_config(folder / "instance", SANDBOX="local", GRADING_WORKERS=2, WARM_POOL=2))
init_instance(app)
server = LiveServer(app)
pool = grading_sandbox(app).get().pool
print(json.dumps({"base": server.base, "token": make_tokens(app, 1)[0]}), flush=True)
sys.stdin.read()
server.stop()
jobs.shutdown(app)
"""


def start(tree: Path) -> tuple[subprocess.Popen, Api]:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'platform'}:{tree}"}
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_INSTANCE", "DLA_SANDBOX", "DLA_EXERCISES"):
        env.pop(name, None)
    process = subprocess.Popen([sys.executable, "-c", SERVE], cwd=tree, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line:
        raise SystemExit(f"the app in {tree} did not start")
    served = json.loads(line)
    return process, Api(served["base"], served["token"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a checkout")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (t.split("=", 1) for t in args.tree)}
    servers = {name: start(tree) for name, tree in trees.items()}
    samples: dict[str, list[float]] = {name: [] for name in trees}
    floor: list[float] = []
    try:
        for _, api in servers.values():
            api.follow(api.submit())  # the job threads start; not timed
        for number in range(args.runs):
            floor.append(floor_s())
            for name, (_, api) in servers.items():
                time.sleep(1.0)  # the pools have refilled and the last verdict's clean-up is done
                started = time.perf_counter()
                body = api.follow(api.submit())
                samples[name].append(time.perf_counter() - started)
                if body["status"] != "done" or not body["result"]["passed"]:
                    raise RuntimeError(f"{name}: unexpected verdict {body}")
            print(f"  round {number + 1}: " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in samples.items()),
                  file=sys.stderr, flush=True)
    finally:
        for process, _ in servers.values():
            process.stdin.close()
            process.wait(timeout=60)
    base = statistics.median(floor)
    rows = [["floor", "python -c 'import torch'", base, percentile(floor, 90), "1.00x"]]
    rows += [[name, str(trees[name]), statistics.median(v), percentile(v, 90), f"{statistics.median(v) / base:.3f}x"]
             for name, v in samples.items()]
    print(f"\nWarm verdict through the API, checkouts side by side (amp-step solution, local warm pool of 2; "
          f"{args.runs} rounds, interleaved; seconds)\n")
    print_table(["checkout", "path", "p50 s", "p90 s", "p50 vs floor"], rows)


if __name__ == "__main__":
    main()
