"""Submit-to-verdict latency of the docker sandbox: cold single-use containers next to the warm pool,
interleaved in one run so load changes hit both alike; then sustained throughput through the pool.

    .venv/bin/python benchmarks/sandbox_latency.py [--runs 8] [--burst 12] [--workers 4] [--pool 2]

Target (issue: sandbox): warm-pool p50 <= 1/5 of the cold-container p50 on a 2-core machine with the
CPU image; under a burst of submissions no submission is lost. Every latency is measured through
`grader.grading.run_submission(..., sandbox="docker")`, the one way the platform grades.
Needs the engine and a current image (sandbox/build-images).
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path

from grader.grading import run_submission
from sandbox.docker import DockerSandbox
from sandbox.pool import WarmPool, bypassed

REPO = Path(__file__).resolve().parent.parent

EXERCISE = "mixed-precision/amp-step"
CODE = (REPO / "exercises" / "mixed-precision" / "amp-step" / "solution.py").read_text()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def graded(seed: int) -> tuple[float, dict]:
    started = time.perf_counter()
    result = run_submission(EXERCISE, CODE, sandbox="docker", seed=seed)
    return time.perf_counter() - started, result


def latency(runs: int, pool: WarmPool) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"cold container": [], "warm pool": []}
    for i in range(runs):
        # Before each sample the pool is full and idle: neither mode competes with a refill that
        # an earlier sample started (a warm sample does start its own replacement, as in real use).
        for mode in samples:
            assert pool.wait_warm(), "the warm pool did not get warm"
            if mode == "cold container":
                with bypassed():
                    seconds, result = graded(seed=1000 + i)
            else:
                seconds, result = graded(seed=2000 + i)
            if not result["passed"]:
                raise SystemExit(f"{mode}: the reference solution did not pass: {result['status']} "
                                 f"{result.get('error')}")
            samples[mode].append(seconds)
    return samples


def burst(count: int, workers: int) -> tuple[float, list[float], int, int]:
    """`count` submissions from `workers` threads at once; (wall s, latencies, verdicts, lost)."""
    seeds = list(range(5000, 5000 + count))
    latencies: list[float] = []
    verdicts: dict[int, dict] = {}
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not seeds:
                    return
                seed = seeds.pop()
            seconds, result = graded(seed)
            with lock:
                latencies.append(seconds)
                verdicts[seed] = result

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    good = sum(1 for seed, r in verdicts.items() if r["passed"] and r["seed"] == seed)
    return wall, latencies, good, count - good


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=8, help="latency samples per mode")
    parser.add_argument("--burst", type=int, default=12, help="submissions in the throughput burst")
    parser.add_argument("--workers", type=int, default=4, help="threads submitting the burst")
    parser.add_argument("--pool", type=int, default=2, help="warm containers")
    args = parser.parse_args()
    ok, why = DockerSandbox().available()
    if not ok:
        raise SystemExit(f"docker sandbox unavailable: {why}")

    with WarmPool(size=args.pool).start() as pool:
        samples = latency(args.runs, pool)
        assert pool.wait_warm()
        wall, latencies, good, lost = burst(args.burst, args.workers)

    cold = statistics.median(samples["cold container"])
    print(f"submit-to-verdict latency, {EXERCISE} reference solution, {args.runs} runs each, interleaved")
    print(f"{'mode':<16} {'p50 s':>7} {'p95 s':>7} {'min s':>7} {'max s':>7} {'p50 / cold p50':>15}")
    for mode, values in samples.items():
        print(f"{mode:<16} {statistics.median(values):>7.2f} {percentile(values, 0.95):>7.2f} "
              f"{min(values):>7.2f} {max(values):>7.2f} {statistics.median(values) / cold:>15.2f}")
    print()
    print(f"burst through the warm pool ({args.pool} containers): {args.burst} submissions from "
          f"{args.workers} threads")
    print(f"{'wall s':>7} {'per min':>8} {'p50 s':>7} {'p95 s':>7} {'passed':>7} {'lost':>5}")
    print(f"{wall:>7.1f} {60 * args.burst / wall:>8.1f} {statistics.median(latencies):>7.2f} "
          f"{percentile(latencies, 0.95):>7.2f} {good:>7} {lost:>5}")


if __name__ == "__main__":
    main()
