"""How often a timed exercise's `faster` check judges by chance (issue: judge the effect): fix-the-bottleneck's
step, or feed-the-model's epoch (`--exercise profiling/feed-the-model`).

    .venv/bin/python benchmarks/bottleneck_timing.py [--gradings 10] [--load 4] [--exercise ID]

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
import time
from pathlib import Path

from grader.core.course import load_exercise
from grader.harness import grade
from sandbox.jail import Confinement

REPO = Path(__file__).resolve().parent.parent
ROUNDS = 11  # at most, in both exercises (grader.checks.referee.timing.TimedRounds)
# Per exercise, (file, should it pass `faster`), relative to the exercise's folder or its corpus folder.
CASES = {"profiling/fix-the-bottleneck": [("solution.py", True), ("perf_counter_regions.py", True),
                                          ("profiler_schedule_step.py", True), ("mistakes/not-fixed.py", False)],
         "profiling/feed-the-model": [("solution.py", True), ("pytorch_forum_batch_sampler.py", True),
                                      ("hf_getitems_batched.py", True), ("starter.py", False),
                                      ("mistakes/workers-fetch-one-at-a-time.py", False)]}


def case_path(exercise: str, name: str) -> Path:
    folder = REPO / "exercises" / exercise
    return folder / name if (folder / name).exists() else REPO / "tests" / "corpus" / exercise / name


def graded_in_fork(exercise_id: str, path: Path) -> tuple[list[tuple[float, float]], dict[str, str], float]:
    """Every timing round's (original_s, learner_s), each check's status and the bar, from one grading."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        exercise = load_exercise(REPO / "exercises" / exercise_id, exercise_id)
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
        os.write(write, pickle.dumps((rounds, checks, seen[0].timing.bar if seen else math.nan)))
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
    parser.add_argument("--exercise", default="profiling/fix-the-bottleneck", choices=sorted(CASES))
    args = parser.parse_args()
    cases = [(case_path(args.exercise, name), should_pass) for name, should_pass in CASES[args.exercise]]
    grade.warm_up()
    load = [multiprocessing.Process(target=busy, daemon=True) for _ in range(args.load)]
    for proc in load:
        proc.start()
    started = time.monotonic()
    results: dict[Path, list] = {path: [] for path, _ in cases}
    try:
        for _ in range(args.gradings):  # interleaved, so a noisy moment hits every case alike
            for path, _ in cases:
                results[path].append(graded_in_fork(args.exercise, path))
    finally:
        for proc in load:
            proc.terminate()
    bar = next(b for gradings in results.values() for _, _, b in gradings if not math.isnan(b))
    print(f"{args.exercise}: {args.gradings} gradings per case, {args.load} busy processes on {os.cpu_count()} "
          f"cores, up to {ROUNDS} rounds, bar {bar:g}x, {time.monotonic() - started:.0f} s")
    print(f"{'case':44} {'faster':>6} {'verdict ratio min/median/max':>29} {'rounds':>6} {'wrong rounds':>12} "
          f"{'P(wrong verdict)':>16}")
    for path, should_pass in cases:
        gradings = results[path]
        verdicts = [statistics.median(o / f for o, f in rounds) for rounds, _, _ in gradings if rounds]
        ratios = [o / f for rounds, _, _ in gradings for o, f in rounds]
        wrong = sum((r < bar) if should_pass else (r >= bar) for r in ratios)
        p = wrong / len(ratios) if ratios else 1.0
        faster = [checks.get("faster") for _, checks, _ in gradings]
        passed = sum(s == "passed" for s in faster)
        label = f"{path.parent.name}/{path.name}"
        print(f"{label:44} {passed:>3}/{len(faster):<2} {min(verdicts):9.2f} {statistics.median(verdicts):9.2f} "
              f"{max(verdicts):9.2f} {len(ratios):6} {wrong:12} {wrong_median_probability(p, ROUNDS):16.2g}")


if __name__ == "__main__":
    main()
