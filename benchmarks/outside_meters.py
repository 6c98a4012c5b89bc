"""What the grading side's own meters add to a verdict (issue: wrong code must not pass).

    .venv/bin/python benchmarks/outside_meters.py [--runs 5]

Side by side in one run, each verdict graded in a fresh fork of one warm grading process (as the warm
pool does), local sandbox: fit-the-budget with and without its memory runs (the evaluate run, measured
and checked, and the grading side's own baseline, original and no-grad processes), and the solution of
every exercise as it is graded now. Prints medians and ratios against amp-step.
"""
from __future__ import annotations

import argparse
import os
import pickle
import statistics
import time
from pathlib import Path

from grader.core.course import load_exercise
from grader.harness import grade
from sandbox.jail import Confinement

REPO = Path(__file__).resolve().parent.parent
EXERCISES = ["mixed-precision/amp-step", "profiling/fix-the-bottleneck", "gpu-memory/fit-the-budget"]


def graded_in_fork(exercise_id: str, without_memory_runs: bool) -> float:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # one verdict per process, as in the warm pool
        exercise = load_exercise(REPO / "exercises" / exercise_id, exercise_id)
        if without_memory_runs:
            real = grade.load_referee

            def load_referee(*args):
                referee = real(*args)
                referee.memory_runs = ()
                return referee

            grade.load_referee = load_referee
        started = time.perf_counter()
        verdict = grade.verdict_for(exercise, (exercise.path / "solution.py").read_text(), Confinement.NAMESPACES,
                                    seed=1)
        os.write(write, pickle.dumps((time.perf_counter() - started, verdict.status.value)))
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.waitpid(pid, 0)
    seconds, status = pickle.loads(data)
    assert status == "passed" or without_memory_runs, (exercise_id, status)  # without: its checks cannot judge
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    grade.warm_up()
    cases = [(e, False) for e in EXERCISES] + [("gpu-memory/fit-the-budget", True)]
    times: dict[tuple[str, bool], list[float]] = {case: [] for case in cases}
    for _ in range(runs):  # interleaved, so a noisy moment hits every case alike
        for case in cases:
            times[case].append(graded_in_fork(*case))
    floor = statistics.median(times[("mixed-precision/amp-step", False)])
    print(f"{'solution graded (local sandbox, warm fork)':58} {'median s':>9} {'x amp-step':>10}")
    for (exercise_id, without), values in times.items():
        label = exercise_id + (" without memory processes" if without else "")
        median = statistics.median(values)
        print(f"{label:58} {median:9.2f} {median / floor:10.2f}")


if __name__ == "__main__":
    main()
