"""How long the web app's administrator commands take to start and finish, beside the floors they stand on.

    .venv/bin/python benchmarks/cli_startup.py [--runs 7]

Each command runs as an administrator runs it (`flask --app academy ...`, a new process each time) against
one instance folder with a migrated SQLite database, made once before the timing (`init-db`). The floors
are `python -c "import flask"` (what any Flask command costs), the same with the libraries every command
of this app imports (SQLAlchemy, Flask-Limiter, Flask-Babel: no command of the app can start faster), and
`python -c "import torch"` (what a command that imported the grading machinery would cost). The cases run
interleaved, so load on a shared machine hits them alike; the table gives the median, min and max of the
runs, and each median as a multiple of the `import flask` floor. A second table times `create_app()`
itself, in-process (median of the runs).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
FLASK = [PYTHON, "-m", "flask", "--app", "academy"]
# What every command of the app imports whatever it does (the app's Flask extensions and its database layer).
LIBRARIES = "flask, sqlalchemy.orm, flask_limiter, flask_babel"


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=REPO, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stdout.decode()}{proc.stderr.decode()}")
    return elapsed


def create_app_seconds(env: dict[str, str], runs: int) -> list[float]:
    """create_app() timed in a fresh process each run (the modules imported once, before the clock starts)."""
    code = ("import time, academy, academy.web.api, academy.cli, academy.web.instructor, academy.web.lessons\n"
            "started = time.perf_counter()\n"
            "academy.create_app()\n"
            "print(time.perf_counter() - started)\n")
    return [float(subprocess.run([PYTHON, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                                 check=True).stdout.split()[-1]) for _ in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7, help="runs of each command")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {key: value for key, value in os.environ.items()
               if key not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")}
        env.update(DLA_INSTANCE=str(Path(tmp) / "instance"), PYTHONDONTWRITEBYTECODE="")
        timed([*FLASK, "init-db"], env)
        timed([*FLASK, "create-user", "first@example.org", "--password", "password123"], env)
        cases: dict[str, list[str] | None] = {
            'floor: python -c "import flask"': [PYTHON, "-c", "import flask"],
            f'floor: python -c "import {LIBRARIES}"': [PYTHON, "-c", f"import {LIBRARIES}"],
            'floor: python -c "import torch"': [PYTHON, "-c", "import torch"],
            "flask --app academy --help": [*FLASK, "--help"],
            "flask --app academy init-db (at head)": [*FLASK, "init-db"],
            "flask --app academy create-user": None,  # a new address each run
            "flask --app academy create-token": [*FLASK, "create-token", "first@example.org"],
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for run in range(args.runs):
            for name, command in cases.items():
                command = command or [*FLASK, "create-user", f"user{run}@example.org", "--password", "password123"]
                samples[name].append(timed(command, env))
        app_runs = create_app_seconds(env, args.runs)
    floor = statistics.median(samples['floor: python -c "import flask"'])
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end, {args.runs} runs each\n")
    print("| command | p50 s | min s | max s | p50 / import flask |")
    print("|---|---:|---:|---:|---:|")
    for name, values in samples.items():
        p50 = statistics.median(values)
        print(f"| {name} | {p50:.2f} | {min(values):.2f} | {max(values):.2f} | {p50 / floor:.1f}x |")
    print("\n| in-process | p50 ms | min ms | max ms |")
    print("|---|---:|---:|---:|")
    print(f"| create_app() | {statistics.median(app_runs) * 1000:.0f} | {min(app_runs) * 1000:.0f} | "
          f"{max(app_runs) * 1000:.0f} |")


if __name__ == "__main__":
    main()
