"""What one verdict costs and how many a machine grades, for every way of grading: the table in docs/deploy.md's
"Throughput" section.

    .venv/bin/python benchmarks/grading_capacity.py [--runs 8] [--count 24] [--clients 6] [--workers 2] \
        [--modes local-threads,rq-local,docker-threads,rq-docker]

Each mode serves a fresh app over HTTP on 127.0.0.1 (its own SQLite instance folder) and grades the lesson-1
reference solution (mixed-precision/amp-step):

    local-threads   job threads in the web process (--workers), local sandbox, warm pool of 2 (the default)
    rq-local        RQ on a private redis-server, --workers `python -m academy worker` processes, local warm pool of 2
    docker-threads  job threads in the web process, docker sandbox, warm pool of 2 containers
    rq-docker       RQ workers as above, each with a docker warm pool of 2 containers

1. warm verdict: `--runs` submissions one after another, each followed as the lesson page does (long-poll
   `?wait=20&seen=STATUS`), from a warm pool (p50, p90 submit-to-verdict);
2. throughput: `--count` submissions at once from `--clients` threads (one account each submission), until every
   verdict is stored: verdicts per minute, and the CPU-seconds the mode spent per verdict while it ran.

CPU-seconds: a cpuacct cgroup (cgroup v1, as root) holds this process and all it starts (the web app, redis, the
workers, the fork servers, the grading and learner processes); for docker modes the engine's containers are in its
own cgroup (cpuacct/docker, which keeps the usage of containers already removed) and dockerd and containerd spend
CPU on starting each container: both are added (other containers running meanwhile would count too). Each mode
is preceded by the floor a fresh grading process cannot beat, `python -c "import torch"` (its wall and CPU
seconds): the ratios hold on a machine whose load wanders. Docker modes need the engine and a current grader
image: each docker mode runs sandbox/build-images first (cached: seconds; DLA_GRADER_IMAGE names the tag), and
without an engine they are skipped and say why.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from api_latency import (
    EXERCISE,
    Api,
    LiveServer,
    RedisProcess,
    app_config,
    docker_ready,
    make_tokens,
    percentile,
    print_table,
    start_worker,
    stop_worker,
)
from throughput import burst, wait_all

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def own_cgroup() -> Path | None:
    """A fresh cpuacct cgroup holding this process (so everything it starts from now on), or None."""
    if os.geteuid() != 0 or not (CPUACCT / "cpuacct.usage").exists():
        return None
    folder = CPUACCT / f"dla-capacity-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    (folder / "cgroup.procs").write_text(str(os.getpid()))
    return folder


def _process_cpu_s(name: str) -> float:
    """CPU seconds of the processes called `name` (dockerd, containerd) and their reaped children."""
    total = 0.0
    for pid in subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout.split():
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def cpu_s(own: Path | None, docker: bool) -> float:
    """CPU seconds so far of this benchmark's cgroup, plus the engine's containers and daemons for docker."""
    total = int((own / "cpuacct.usage").read_text()) / 1e9 if own else float("nan")
    if docker:
        with contextlib.suppress(OSError):
            total += int((CPUACCT / "docker" / "cpuacct.usage").read_text()) / 1e9
        total += _process_cpu_s("dockerd") + _process_cpu_s("containerd")
    return total


def floor() -> tuple[float, float]:
    """`python -c "import torch"`: (wall s, CPU s)."""
    before, started = os.times(), time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    after = os.times()
    return time.perf_counter() - started, after.children_user + after.children_system - \
        before.children_user - before.children_system


@contextlib.contextmanager
def threads(folder: Path, sandbox: str, workers: int, accounts: int) -> Iterator[tuple[Any, list[Api], Any]]:
    from academy import create_app, jobs
    from academy.instance import init_instance
    from academy.jobs import grading_sandbox

    app = create_app(app_config(folder / "instance", SANDBOX=sandbox, GRADING_WORKERS=workers, WARM_POOL=2))
    init_instance(app)
    server = LiveServer(app)
    try:
        apis = [Api(server.base, token) for token in make_tokens(app, accounts)]
        pool = grading_sandbox(app).get().pool

        def settle() -> None:
            pool.wait_warm()
            time.sleep(0.3)  # the last verdict's clean-up is done
        apis[0].follow(apis[0].submit())  # the job threads have started
        yield app, apis, settle
    finally:
        server.stop()
        jobs.shutdown(app)


@contextlib.contextmanager
def rq(folder: Path, sandbox: str, workers: int, accounts: int) -> Iterator[tuple[Any, list[Api], Any]]:
    from academy import create_app
    from academy.instance import init_instance

    redis = RedisProcess()
    app = create_app(app_config(folder / "instance", SANDBOX=sandbox, REDIS_URL=redis.url))
    init_instance(app)
    server = LiveServer(app)
    processes = [start_worker(folder / "instance", redis.url, folder / f"worker-{i}.log", sandbox=sandbox,
                              extra_env={"DLA_WARM_POOL": "2"}) for i in range(workers)]
    try:
        apis = [Api(server.base, token) for token in make_tokens(app, accounts)]
        # Every worker has started, imported everything and filled its pool: one verdict each, not counted.
        for submission_id, api in [(api.submit(), api) for api in apis[:workers]]:
            api.wait(submission_id, workers=processes)

        def settle() -> None:
            time.sleep(4 if sandbox == "docker" else 1.5)  # the workers' pools refill (they are other processes)
        yield app, apis, settle
    finally:
        for process in processes:
            stop_worker(process)
        server.stop()
        redis.stop()


# key: (what grades, setup, sandbox, needs docker)
MODES: dict[str, tuple[str, Callable[..., Any], str, bool]] = {
    "local-threads": ("web process threads, local warm pool of 2", threads, "local", False),
    "rq-local": ("RQ worker processes, local warm pool of 2 each", rq, "local", False),
    "docker-threads": ("web process threads, docker warm pool of 2", threads, "docker", True),
    "rq-docker": ("RQ worker processes, docker warm pool of 2 each", rq, "docker", True),
}


def measure(key: str, args: argparse.Namespace, own: Path | None) -> list[Any]:
    label, setup, sandbox, docker = MODES[key]
    if docker:  # the image must hold the files on disk now (others may be editing them): a cached rebuild, seconds
        subprocess.run([str(Path(__file__).resolve().parent.parent / "sandbox" / "build-images")], check=True,
                       stdout=subprocess.DEVNULL)
    floors = [floor() for _ in range(3)]
    base_wall, base_cpu = statistics.median(f[0] for f in floors), statistics.median(f[1] for f in floors)
    with tempfile.TemporaryDirectory(prefix="dla-capacity-") as folder, \
            setup(Path(folder), sandbox, args.workers, args.runs + args.count + args.workers) as (app, apis, settle):
        latencies = []
        for number in range(args.runs):
            settle()
            started = time.perf_counter()
            body = apis[-1 - number].follow(apis[-1 - number].submit())
            latencies.append(time.perf_counter() - started)
            if body["status"] != "done" or not body["result"]["passed"]:
                raise RuntimeError(f"{key}: unexpected verdict {body}")
            print(f"  {key} verdict {number + 1}: {latencies[-1]:.3f} s", file=sys.stderr, flush=True)
        settle()
        cpu_before = cpu_s(own, docker)
        sent = burst(apis[args.workers:args.workers + args.count], args.count, args.clients)
        done = wait_all(app, sent["ids"], sent["began"], args.timeout)
        spent = cpu_s(own, docker) - cpu_before
    graded = done["rows"].get("done", 0)
    if graded != args.count:
        raise RuntimeError(f"{key}: {done['rows']} of {args.count} submissions")
    per_minute = graded / done["elapsed"] * 60
    p50, p90 = statistics.median(latencies), percentile(latencies, 90)
    cpu_per = spent / graded
    print(f"  {key}: {per_minute:.1f} verdicts/min, {cpu_per:.2f} CPU-s each", file=sys.stderr, flush=True)
    return [key, f"{label}; x{args.workers}", p50, p90, f"{p50 / base_wall:.2f}x", per_minute, cpu_per,
            f"{cpu_per / base_cpu:.2f}x", f"{base_wall:.2f} / {base_cpu:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=8, help="warm verdicts, one after another")
    parser.add_argument("--count", type=int, default=24, help="submissions in the burst")
    parser.add_argument("--clients", type=int, default=6, help="threads that send the burst")
    parser.add_argument("--workers", type=int, default=2, help="grading threads, or RQ worker processes")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    own = own_cgroup()
    try:
        report(args, own)
    finally:
        if own is not None:  # back to the root cgroup, and this one gone
            (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            with contextlib.suppress(OSError):
                own.rmdir()


def report(args: argparse.Namespace, own: Path | None) -> None:
    keys = args.modes.split(",")
    skipped = ""
    if any(MODES[key][3] for key in keys) and not (ready := docker_ready())[0] and "image" not in ready[1]:
        skipped = ready[1]  # no engine (a stale image is rebuilt before each docker mode)
    rows = []
    for key in keys:
        if MODES[key][3] and skipped:
            rows.append([key, MODES[key][0], "-", "-", "-", "-", "-", "-", f"skipped: {skipped}"])
            continue
        rows.append(measure(key, args, own))
    print(f"\nGrading capacity ({EXERCISE} solution; {os.cpu_count()} CPUs; warm verdicts: {args.runs} one after "
          f"another; throughput: {args.count} submissions from {args.clients} clients)\n")
    print_table(["mode", "graded by", "warm p50 s", "warm p90 s", "p50 vs floor", "verdicts/min",
                 "CPU-s/verdict", "CPU vs floor", "floor s wall / CPU"], rows)
    if own is None:
        print("\n(CPU-seconds need root and cgroup v1 cpuacct: shown as nan)")


if __name__ == "__main__":
    main()
