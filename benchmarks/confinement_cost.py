"""What confining a submission costs, and why the local sandbox builds its own view instead of using
bubblewrap: side by side, interleaved.

    .venv/bin/python benchmarks/confinement_cost.py [--runs 10]

    fork only               fork a child of a warm process and wait for it (the floor of a warm verdict)
    fork + full confinement the same child through the jail (sandbox.jail.Jail.run): the zygote's fork,
                            cgroup, namespaces, the allowlist view, capabilities, seccomp (what every
                            local submission pays per run)
    python -c 'import torch'  a fresh interpreter, the floor of a cold verdict
    bwrap + import torch    the same inside bubblewrap with an equivalent read-only view: bubblewrap
                            confines a process it executes, so each submission would pay this
Needs root (the cgroup) and, for the last row, Debian's `bubblewrap`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from grader.harness.view import learner_view
from sandbox.jail import Confinement, Jail, Limits
from sandbox.jail.preflight import Echo

JAIL: Jail | None = None


def fork_only() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def confined() -> None:
    outcome = JAIL.run(Echo(), Limits(time_s=10, memory_mb=512))
    assert outcome.payload == b"confined", outcome


def bwrap_command() -> list[str] | None:
    if not shutil.which("bwrap"):
        return None
    view = learner_view(Path("/nonexistent"))
    binds = [arg for source in view.sources for arg in ("--ro-bind", str(source), str(source))]
    links = [arg for path in ("/bin", "/lib", "/lib64", "/sbin") if os.path.islink(path)
             for arg in ("--symlink", os.readlink(path), path)]
    return ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", *binds, *links, "--dev", "/dev",
            "--proc", "/proc", "--tmpfs", "/tmp", sys.executable, "-c", "import torch"]


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    import torch  # noqa: F401 - a warm process, as the fork server is

    global JAIL
    JAIL = Jail(Confinement.NAMESPACES, learner_view(Path("/nonexistent")))

    cases = {"fork only": fork_only, "fork + full confinement": confined,
             "python -c 'import torch'": lambda: subprocess.run([sys.executable, "-c", "import torch"], check=True)}
    command = bwrap_command()
    if command:
        cases["bwrap + import torch"] = lambda: subprocess.run(command, check=True)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, action in cases.items():
            samples[name].append(timed(action))
    print(f"\nConfinement cost, {args.runs} interleaved runs (seconds)\n")
    print("| case | p50 ms | max ms |")
    print("|---|---:|---:|")
    for name, values in samples.items():
        print(f"| {name} | {statistics.median(values) * 1000:.1f} | {max(values) * 1000:.1f} |")
    if not command:
        print("\n(bwrap not installed: apt-get install bubblewrap for the last row)")


if __name__ == "__main__":
    main()
