"""Both sandboxes side by side: cold against warm, bursts through the warm pools, CPU per verdict.

    .venv/bin/python benchmarks/sandbox_latency.py [--runs 8] [--burst 12] [--clients 4] [--pool 2]

Every latency is measured through `grader.host.grading.run_submission`, the one way the platform grades, with
the amp-step reference solution. Modes take turns (interleaved) so load changes hit all alike; each
round also times the floor a fresh grading process cannot beat, `python -c "import torch"`.

CPU seconds per verdict, everything the verdict costs including preparing the next warm process (the
refill): for local modes, the CPU time of this process's own cgroup (cgroup v1 cpuacct, as root), which
holds the grading processes, the fork server and the learners' cgroups below it; for docker modes the
containers live in the engine's cgroups, so the whole machine's busy time (/proc/stat) is used and the
machine must be quiet. The docker modes need the engine and a current image (sandbox/build-images);
without them they are skipped and say why.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from grader.host.grading import run_submission
from grader.host.sandboxes import HarnessSandbox, get_sandbox

REPO = Path(__file__).resolve().parent.parent
EXERCISE = "mixed-precision/amp-step"
CODE = (REPO / "exercises" / "mixed-precision" / "amp-step" / "solution.py").read_text()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def busy_cpu_s() -> float:
    """Seconds of CPU the whole machine has spent busy since boot (user+nice+system+irq+softirq)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def own_cpuacct() -> Path | None:
    """A fresh cpuacct cgroup holding this process (and so everything it starts), or None."""
    if os.geteuid() != 0 or not (CPUACCT / "cpuacct.usage").exists():
        return None
    folder = CPUACCT / f"dla-bench-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    (folder / "cgroup.procs").write_text(str(os.getpid()))
    return folder


def cgroup_cpu_s(folder: Path) -> float:
    return int((folder / "cpuacct.usage").read_text()) / 1e9


def graded(sandbox: HarnessSandbox, seed: int) -> float:
    started = time.perf_counter()
    result = run_submission(EXERCISE, CODE, sandbox=sandbox, seed=seed)
    if not result["passed"]:
        raise SystemExit(f"the reference solution did not pass: {result['status']} {result.get('error')}")
    return time.perf_counter() - started


def floor_s() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - started


def burst(sandbox: HarnessSandbox, count: int, clients: int) -> tuple[float, list[float], int]:
    """`count` submissions from `clients` threads at once: (wall s, latencies, lost)."""
    latencies: list[float] = []
    lock = threading.Lock()
    todo = list(range(count))
    lost = [0]

    def client() -> None:
        while True:
            with lock:
                if not todo:
                    return
                seed = 5000 + todo.pop()
            try:
                seconds = graded(sandbox, seed)
            except BaseException:  # noqa: BLE001 - counted, the table says so
                with lock:
                    lost[0] += 1
                continue
            with lock:
                latencies.append(seconds)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, latencies, lost[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--burst", type=int, default=12)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--pool", type=int, default=2)
    args = parser.parse_args()

    accounting = own_cpuacct()
    sandboxes = {"local cold": get_sandbox("local"), "local warm": get_sandbox("local", warm=args.pool)}
    try:
        sandboxes["docker cold"] = get_sandbox("docker")
        sandboxes["docker warm"] = get_sandbox("docker", warm=args.pool)
    except Exception as exc:  # noqa: BLE001 - reported in the tables
        why = str(exc)
        print(f"docker modes skipped: {why}", file=sys.stderr)
    warm = {name: s.pool for name, s in sandboxes.items() if getattr(s, "pool", None) is not None}
    try:
        samples: dict[str, list[float]] = {"floor: python -c 'import torch'": []}
        samples.update({name: [] for name in sandboxes})
        cpu: dict[str, list[float]] = {name: [] for name in sandboxes}
        for i in range(args.runs):
            samples["floor: python -c 'import torch'"].append(floor_s())
            for name, sandbox in sandboxes.items():
                for pool in warm.values():  # every pool full and idle: nobody competes with a refill
                    assert pool.wait_warm(), "a warm pool did not get warm"
                meter = (lambda: cgroup_cpu_s(accounting)) if accounting and name.startswith("local") else busy_cpu_s
                before = meter()
                samples[name].append(graded(sandbox, 1000 + i))
                if name in warm:
                    warm[name].wait_warm()  # the refill this verdict caused is part of its cost
                    time.sleep(0.2)  # the discarded process's exit and removal too
                cpu[name].append(meter() - before)
            print(f"  round {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in samples.items()),
                  file=sys.stderr, flush=True)

        floor = statistics.median(samples["floor: python -c 'import torch'"])
        print(f"\nSubmit-to-verdict, {EXERCISE} reference solution, {args.runs} runs each, interleaved "
              f"(run_submission; seconds)\n")
        print("| mode | p50 s | p95 s | min s | max s | p50 / floor | CPU s per verdict (p50) |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, values in samples.items():
            how = " (cgroup)" if accounting and name.startswith("local") else " (machine)"
            cpu_cell = f"{statistics.median(cpu[name]):.2f}{how}" if name in cpu else "-"
            print(f"| {name} | {statistics.median(values):.2f} | {percentile(values, 0.95):.2f} | "
                  f"{min(values):.2f} | {max(values):.2f} | {statistics.median(values) / floor:.2f} | {cpu_cell} |")

        print(f"\nBurst: {args.burst} submissions from {args.clients} clients through each warm pool "
              f"({args.pool} waiting processes)\n")
        print("| mode | wall s | verdicts/min | p50 s | p95 s | passed | lost |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, pool in warm.items():
            assert pool.wait_warm()
            wall, latencies, lost = burst(sandboxes[name], args.burst, args.clients)
            print(f"| {name} | {wall:.1f} | {len(latencies) / wall * 60:.1f} | {statistics.median(latencies):.2f} | "
                  f"{percentile(latencies, 0.95):.2f} | {len(latencies)} | {lost} |")
    finally:
        for sandbox in sandboxes.values():
            sandbox.close()
        if accounting:
            (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            accounting.rmdir()


if __name__ == "__main__":
    main()
