"""How long `grader check` takes end to end, next to the floor it cannot beat (starting Python and
importing torch), run side by side so the ratio holds on a noisy machine.

    .venv/bin/python benchmarks/grader_check.py [--runs 7]

Targets: `grader check mixed-precision/amp-step .../solution.py` under 5 s on a 2-core CPU machine
(issue: grader core), and at most 1.1x the true floor of a fresh grading process,
`python -c "import torch, torch._dynamo"` (torch imports torch._dynamo itself when the first optimizer
is built) (issue: one harness protocol).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, capture_output=True, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    cases = {
        "python -c 'import torch, torch._dynamo' (floor)": [sys.executable, "-c", "import torch, torch._dynamo"],
        "python -c 'import torch'": [sys.executable, "-c", "import torch"],
        "grader check amp-step solution": [str(BIN / "grader"), "check", "mixed-precision/amp-step",
                                           "exercises/mixed-precision/amp-step/solution.py", "--sandbox", "local"],
        "grader check fix-underflow solution": [str(BIN / "grader"), "check", "mixed-precision/fix-underflow",
                                                "exercises/mixed-precision/fix-underflow/solution.py",
                                                "--sandbox", "local"],
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):  # interleaved, so load changes hit every case alike
        for name, command in cases.items():
            samples[name].append(timed(command))
    floor = statistics.median(samples["python -c 'import torch, torch._dynamo' (floor)"])
    print(f"{'case':<48} {'p50 s':>7} {'p95 s':>7} {'x floor':>8}")
    for name, values in samples.items():
        values.sort()
        p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        print(f"{name:<48} {statistics.median(values):>7.2f} {p95:>7.2f} {statistics.median(values) / floor:>8.2f}")


if __name__ == "__main__":
    main()
