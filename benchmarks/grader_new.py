"""How long from `grader new` to an exercise that `grader validate` passes, per way of starting one.

    .venv/bin/python benchmarks/grader_new.py [--runs 5] [--from-runs 3]

Each run works in a fresh copy of the course (DLA_EXERCISES), times `grader new LESSON/EXERCISE` and then
`grader validate` of the new folder (local sandbox, as the tests run it), and fails loudly if either
command fails: the number is only worth printing when the exercise validated. The cases run interleaved
so load on a shared machine hits them alike.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRADER = str(Path(sys.executable).parent / "grader")


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=REPO, capture_output=True, env=env, check=False)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stdout.decode()}{proc.stderr.decode()}")
    return time.perf_counter() - started


def one_run(extra: list[str], run: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / "exercises"
        shutil.copytree(REPO / "exercises", course, ignore=shutil.ignore_patterns("__pycache__"))
        env = {**os.environ, "DLA_EXERCISES": str(course)}
        new = timed([GRADER, "new", f"gpu-memory/bench-{run}", *extra], env)
        validate = timed([GRADER, "validate", str(course / "gpu-memory" / f"bench-{run}"), "--sandbox", "local"], env)
        return new, validate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5, help="runs of the template case")
    parser.add_argument("--from-runs", type=int, default=3, help="runs of the --from amp-step case")
    args = parser.parse_args()
    cases = {"grader new (template: 1 check, 1 mistake)": ([], args.runs),
             "grader new --from mixed-precision/amp-step (6 checks, 8 mistakes)":
                 (["--from", "mixed-precision/amp-step"], args.from_runs)}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for run in range(max(n for _, n in cases.values())):
        for name, (extra, n) in cases.items():
            if run < n:
                samples[name].append(one_run(extra, run))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| case | runs | new p50 s | validate p50 s | new to validated p50 s | min s | max s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, values in samples.items():
        totals = sorted(n + v for n, v in values)
        print(f"| {name} | {len(values)} | {statistics.median(n for n, _ in values):.2f} | "
              f"{statistics.median(v for _, v in values):.2f} | {statistics.median(totals):.2f} | "
              f"{totals[0]:.2f} | {totals[-1]:.2f} |")


if __name__ == "__main__":
    main()
