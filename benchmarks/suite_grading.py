"""What the test suite's two largest fixtures cost in grading alone: the corpus (tests/corpus, every file
graded once) and the course validation (tests/grader/test_validate_course.py, the solution and every
mistake graded once). Every one of those cases is graded here once, one at a time on a warm local pool
(as those fixtures grade, but without their parallelism), next to the floor of one cold grading process:
the table says how much of the suite's CPU is grading work that no test plumbing can remove.

    .venv/bin/python benchmarks/suite_grading.py [--exercise ID ...]

CPU-s is the whole machine's busy time while a grading runs (/proc/stat: the forked grading process is
not this process's child, and its measurement subprocesses are its own), so run it on an idle machine.
Target (issue 27, item 7): pytest on a fresh clone in at most 15 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sandbox_latency import busy_cpu_s  # noqa: E402 - the machine-wide CPU clock the other benchmarks use

from grader.core.course import load_course  # noqa: E402
from grader.host.grading import run_submission  # noqa: E402
from grader.host.sandboxes import get_sandbox  # noqa: E402

CORPUS = REPO / "tests" / "corpus"


def measured(action) -> tuple[float, float]:  # noqa: ANN001 - a callable
    cpu, wall = busy_cpu_s(), time.monotonic()
    action()
    return time.monotonic() - wall, busy_cpu_s() - cpu


def cases(exercise) -> dict[str, list[Path]]:  # noqa: ANN001 - grader.core.course.Exercise
    """The files the suite grades for this exercise, by fixture."""
    return {"corpus": sorted((CORPUS / exercise.id).glob("*.py")),
            "validate": [exercise.path / "solution.py", *(m.path for m in exercise.mistakes())]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exercise", action="append", help="only these exercise ids (default: every one)")
    args = parser.parse_args()
    course = load_course()
    selected = args.exercise or sorted(course.exercises)

    floor = [measured(lambda: subprocess.run([sys.executable, "-c", "import torch, torch._dynamo"], check=True))
             for _ in range(3)]
    sandbox = get_sandbox("local", warm=1)
    rows = []
    try:
        amp = course.exercises["mixed-precision/amp-step"]
        run_submission(amp.id, (amp.path / "solution.py").read_text(), sandbox=sandbox, seed=1)  # pool warm
        for exercise_id in selected:
            cost = {}
            for fixture, paths in cases(course.exercises[exercise_id]).items():
                samples = [measured(lambda path=path: run_submission(exercise_id, path.read_text(), sandbox=sandbox,
                                                                     seed=1)) for path in paths]
                cost[fixture] = (len(paths), sum(s[0] for s in samples), sum(s[1] for s in samples))
            rows.append((exercise_id, cost))
    finally:
        sandbox.close()

    floor_wall, floor_cpu = (statistics.median(v) for v in zip(*floor))
    print(f"cold process, python -c 'import torch, torch._dynamo': {floor_wall:.2f} s wall, {floor_cpu:.2f} CPU-s\n")
    print(f"{'exercise':<42} {'corpus':>6} {'CPU-s':>7} {'validate':>8} {'CPU-s':>7} {'CPU-s/grading':>14}")
    totals = {"corpus": [0, 0.0, 0.0], "validate": [0, 0.0, 0.0]}
    for exercise_id, cost in rows:
        for fixture, (n, wall, cpu) in cost.items():
            totals[fixture] = [totals[fixture][0] + n, totals[fixture][1] + wall, totals[fixture][2] + cpu]
        (cn, _, cc), (vn, _, vc) = cost["corpus"], cost["validate"]
        print(f"{exercise_id:<42} {cn:>6} {cc:>7.0f} {vn:>8} {vc:>7.0f} {(cc + vc) / max(1, cn + vn):>14.2f}")
    (cn, cw, cc), (vn, vw, vc) = totals["corpus"], totals["validate"]
    print(f"{'total':<42} {cn:>6} {cc:>7.0f} {vn:>8} {vc:>7.0f} {(cc + vc) / max(1, cn + vn):>14.2f}")
    print(f"\n{cn + vn} gradings, {cw + vw:.0f} s one at a time, {cc + vc:.0f} CPU-s: {(cc + vc) / 2:.0f} s of both "
          f"cores fully busy, of the 900 s the target allows the whole suite.")


if __name__ == "__main__":
    main()
