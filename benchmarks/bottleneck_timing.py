"""How often fix-the-bottleneck's `faster` check judges by chance (issue: judge the effect).

    .venv/bin/python benchmarks/bottleneck_timing.py [--gradings 10] [--load 4]

Grades each case `--gradings` times in a fresh fork of one warm grading process (as the warm pool
does; local sandbox, namespaces), while `--load` busy processes (default: twice the cores) compete for
the CPU, and records every timing round the referee measured (original step's time over the learner's).
For each case it prints the verdict ratios seen (the median of the rounds, as `faster` judges) and an
estimate of how often that median lands on the wrong side of the bar: with p the share of single rounds
on the wrong side, the median of n rounds is wrong when more than half of them are, P = P(Binom(n, p) >
n/2), assuming rounds independent (they are not quite: a burst of load can span rounds, which is why the
observed verdict ratios are printed beside it).
"""
from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import pickle
import statistics
import sys
import time
from pathlib import Path

from grader.core.course import load_exercise
from grader.harness import grade
from sandbox.jail import Confinement

REPO = Path(__file__).resolve().parent.parent
EXERCISE = "profiling/fix-the-bottleneck"
FOLDER = REPO / "exercises" / EXERCISE
CORPUS = REPO / "tests" / "corpus" / EXERCISE
# (file, should it pass `faster`)
CASES = [(FOLDER / "solution.py", True), (CORPUS / "perf_counter_regions.py", True),
         (CORPUS / "profiler_schedule_step.py", True), (FOLDER / "mistakes" / "not-fixed.py", False)]


def graded_in_fork(path: Path) -> tuple[list[tuple[float, float]], dict[str, str]]:
    """Every timing round's (original_s, learner_s) and each check's status, from one grading."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        exercise = load_exercise(FOLDER, EXERCISE)
        seen: list = []
        real = grade.load_referee

        def load_referee(*args):
            referee = real(*args)
            seen.append(referee)
            return referee

        grade.load_referee = load_referee
        verdict = grade.verdict_for(exercise, path.read_text(), Confinement.NAMESPACES)
        rounds = [(r["original_s"], r["learner_s"]) for r in seen[0].outside()["rounds"]] if seen else []
        checks = {name: ("passed" if c.get("passed") else "failed") for name, c in verdict.checks.items()}
        os.write(write, pickle.dumps((rounds, checks)))
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.waitpid(pid, 0)
    return pickle.loads(data)


def busy() -> None:
    while True:
        pass


def wrong_median_probability(p: float, n: int) -> float:
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n // 2 + 1, n + 1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gradings", type=int, default=10)
    parser.add_argument("--load", type=int, default=2 * os.cpu_count())
    args = parser.parse_args()
    sys.path.insert(0, str(FOLDER / "checks"))
    import scenario
    from test_fix_the_bottleneck import MIN_SPEEDUP

    bar = MIN_SPEEDUP["cpu"]
    grade.warm_up()
    load = [multiprocessing.Process(target=busy, daemon=True) for _ in range(args.load)]
    for proc in load:
        proc.start()
    started = time.monotonic()
    results: dict[Path, list] = {path: [] for path, _ in CASES}
    try:
        for _ in range(args.gradings):  # interleaved, so a noisy moment hits every case alike
            for path, _ in CASES:
                results[path].append(graded_in_fork(path))
    finally:
        for proc in load:
            proc.terminate()
    print(f"{args.gradings} gradings per case, {args.load} busy processes on {os.cpu_count()} cores, "
          f"up to {scenario.ROUNDS} rounds of {scenario.TIMED_BATCHES} step(s) of {scenario.TIMED_BATCH} rows, "
          f"bar {bar:g}x, {time.monotonic() - started:.0f} s")
    print(f"{'case':44} {'faster':>6} {'verdict ratio min/median/max':>29} {'rounds':>6} {'wrong rounds':>12} "
          f"{'P(wrong verdict)':>16}")
    for path, should_pass in CASES:
        gradings = results[path]
        verdicts = [statistics.median(o / f for o, f in rounds) for rounds, _ in gradings if rounds]
        ratios = [o / f for rounds, _ in gradings for o, f in rounds]
        wrong = sum((r < bar) if should_pass else (r >= bar) for r in ratios)
        p = wrong / len(ratios) if ratios else 1.0
        faster = [checks.get("faster") for _, checks in gradings]
        passed = sum(s == "passed" for s in faster)
        label = f"{path.parent.name}/{path.name}"
        print(f"{label:44} {passed:>3}/{len(faster):<2} {min(verdicts):9.2f} {statistics.median(verdicts):9.2f} "
              f"{max(verdicts):9.2f} {len(ratios):6} {wrong:12} {wrong_median_probability(p, scenario.ROUNDS):16.2g}")


if __name__ == "__main__":
    main()
