"""Where a warm verdict's time goes, step by step, through the HTTP API (local sandbox, warm pool of 2).

    .venv/bin/python benchmarks/verdict_profile.py [--runs 15] [--cprofile FILE]

Serves a fresh app over HTTP on 127.0.0.1 (job threads in the web process, local sandbox, warm pool of 2) and
submits the amp-step reference solution `--runs` times, following each as the lesson page does (long-polls
`GET ?wait=20&seen=STATUS`). Timestamps taken around the platform's own functions (wrapped in this process only,
for the run: nothing is replaced) split each verdict into steps; printed: the median ms of each step, and the
p50 submit-to-verdict time beside `python -c "import torch"` (the floor a fresh process cannot beat).
`--cprofile FILE`: also a cProfile of the job threads (pstats file) for what the steps themselves spend (with
`--inside`: of the last run's verdict_for, in the grading process).

    .venv/bin/python benchmarks/verdict_profile.py --inside [--runs 15]

The step "grading process: request to verdict line", split: this process warms as a fork-server child does
(grader.harness.grade.warm_up, run_pytest_once), and each run forks a child that makes the learner's jail (before
the request, as serve.py does) and then times the harness's own steps of one verdict (median ms).
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from api_latency import EXERCISE, SOLUTION, Api, LiveServer, app_config, floor_s, make_tokens, print_table

MARKS: dict[str, float] = {}  # this round's moments, by name (one submission at a time)
SPENT: dict[str, float] = {}  # this round's seconds inside nested calls, by name
CALLS: dict[str, int] = {}  # this round's calls, by name


def _mark(name: str) -> None:
    MARKS.setdefault(name, time.perf_counter())


def _mark_last(name: str) -> None:
    MARKS[name] = time.perf_counter()


def timed(owner: Any, attribute: str, name: str, before: str = "", after: str = "") -> None:
    """Wrap `owner.attribute`: add its seconds to SPENT[name]; mark `before`/`after` the first call."""
    original = getattr(owner, attribute)
    bound = isinstance(owner, type) and isinstance(owner.__dict__.get(attribute), classmethod)
    function = original.__func__ if bound else original

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before:
            _mark(before)
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT[name] = SPENT.get(name, 0.0) + time.perf_counter() - started
            CALLS[name] = CALLS.get(name, 0) + 1
            if after:
                (_mark_last if after.endswith("(last)") else _mark)(after)
    setattr(owner, attribute, classmethod(wrapper) if bound else wrapper)


def instrument(app: Any, profile: cProfile.Profile | None) -> None:
    import sqlalchemy.orm

    import grader.core.jsonschemas as jsonschemas
    import grader.core.protocol as protocol
    import grader.host.grading as grading
    from academy import jobs
    from academy.jobs import sandbox as job_sandbox
    from academy.jobs import waiting
    from academy.web import api, shown
    from sandbox import pool, process

    timed(jobs, "enqueue", "enqueue", before="enqueue")
    runner = app.extensions["academy.jobs"]
    for kind, handler in list(runner.handlers.items()):
        def job(object_id: int, handler: Callable[[int], None] = handler) -> None:
            _mark("job starts")
            if profile is not None:
                profile.enable()
            try:
                handler(object_id)
            finally:
                if profile is not None:
                    profile.disable()
                _mark("job ends")
        runner.handlers[kind] = job
    timed(job_sandbox.GradingSandbox, "grade", "sandbox.grade", before="sandbox grade starts",
          after="sandbox grade ends")
    timed(pool.WarmPool, "take", "pool.take", after="process taken")
    timed(process.EntryProcess, "answer", "process.answer", after="reply read")
    timed(pool.WarmPool, "discard", "pool.discard")
    timed(grading, "verdict_of", "verdict_of")
    timed(protocol.RawVerdict, "from_dict", "RawVerdict.from_dict (schema)")
    timed(grading, "build_result", "build_result")
    timed(jsonschemas, "validate", "jsonschemas.validate (each schema check)")
    timed(grading, "run_submission", "run_submission", after="run_submission ends")
    timed(sqlalchemy.orm.Session, "commit", "db commits")
    timed(waiting.Finishes, "announce", "announce", after="announced (last)")
    timed(api, "submission_json", "submission_json")
    timed(shown, "learner_result", "learner_result")
    timed(shown, "hints_on_request", "hints_on_request")


STEPS = [  # (step, from mark, to mark)
    ("POST: request, auth, limits, insert, commit", "post sent", "enqueue"),
    ("enqueue -> job thread starts", "enqueue", "job starts"),
    ("job: read row, mark running, announce, exercise", "job starts", "sandbox grade starts"),
    ("pool hand-off (take)", "sandbox grade starts", "process taken"),
    ("grading process: request to verdict line", "process taken", "reply read"),
    ("process hand-back (discard)", "reply read", "sandbox grade ends"),
    ("verdict: parse, validate, build, validate", "sandbox grade ends", "run_submission ends"),
    ("store verdict, commit, announce", "run_submission ends", "announced (last)"),
    ("long-poll wakes, reads, answers", "announced (last)", "verdict received"),
    ("(after the learner's path: LMS hooks)", "announced (last)", "job ends"),
    ("submit to verdict", "post sent", "verdict received"),
]


INSIDE = [  # (step, harness function wrapped) for --inside: grader/harness/grade.py's own steps
    ("read the checks' referee (load_referee)", "load_referee"),
    ("learner processes: fork, confine, run, meter (_Runs._run, each)", "_Runs._run"),
    ("  of which: the learner's cgroup made (SubmissionCgroup.create)", "cgroup create"),
    ("  of which: the learner's cgroup removed (SubmissionCgroup.remove)", "cgroup remove"),
    ("  of which: fork from the zygote (Zygote.spawn)", "zygote spawn"),
    ("pytest checks (_run_checks)", "_run_checks"),
    ("verdict bounded to its shape (RawVerdict.bounded)", "RawVerdict.bounded"),
]


def inside(runs: int, profile_to: Path | None = None) -> None:
    """One verdict's steps inside a warm grading process (the child of a fork server)."""
    import json
    import os

    from grader.core.course import load_exercise
    from grader.core.protocol import RawVerdict
    from grader.harness import grade
    from sandbox.jail import Confinement

    grade.warm_up()
    grade.run_pytest_once()
    root = Path(__file__).resolve().parent.parent / "exercises"
    timed(grade, "load_referee", "load_referee")
    timed(grade._Runs, "_run", "_Runs._run")
    timed(grade, "_run_checks", "_run_checks")
    from sandbox.jail import cgroups, zygote
    timed(cgroups.SubmissionCgroup, "create", "cgroup create")
    timed(cgroups.SubmissionCgroup, "remove", "cgroup remove")
    timed(zygote.Zygote, "spawn", "zygote spawn")
    timed(RawVerdict, "bounded", "RawVerdict.bounded")
    spent: dict[str, list[float]] = {}
    floor: list[float] = []
    for number in range(runs):
        floor.append(floor_s())
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # as a fork-server child: the jail first, then the request
            code = 1
            try:
                os.close(reader)
                with grade.learner_jail(root, Confinement.NAMESPACES) as jail:
                    exercise = load_exercise(root / EXERCISE, EXERCISE, authoring_files=False)
                    SPENT.clear()
                    CALLS.clear()
                    profile = cProfile.Profile() if profile_to is not None and number == runs - 1 else None
                    started = time.perf_counter()
                    if profile is not None:
                        profile.enable()
                    verdict = grade.verdict_for(exercise, SOLUTION, Confinement.NAMESPACES, jail=jail)
                    SPENT["verdict_for (all)"] = time.perf_counter() - started
                    if profile is not None:
                        profile.disable()
                        profile.dump_stats(profile_to)
                    SPENT["passed"] = float(verdict.status.value == "passed")
                SPENT["learner processes"] = float(CALLS.get("_Runs._run", 0))
                os.write(writer, json.dumps(SPENT).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(writer)
        with os.fdopen(reader, "rb") as stream:
            got = json.loads(stream.read() or b"{}")
        os.waitpid(pid, 0)
        processes = int(got.pop("learner processes", 0))
        if not got.pop("passed", 0):
            raise RuntimeError(f"run {number + 1}: the solution did not pass")
        for name, seconds in got.items():
            spent.setdefault(name, []).append(seconds)
        print(f"  run {number + 1}: {got['verdict_for (all)'] * 1000:.0f} ms", file=sys.stderr, flush=True)
    print(f"\nInside a warm grading process: one verdict's steps ({EXERCISE} solution, namespaces; {runs} runs; "
          f"ms per verdict; {processes} learner processes a verdict)\n")
    rows = [[step, statistics.median(spent[name]) * 1000] for step, name in INSIDE if name in spent]
    total = statistics.median(spent["verdict_for (all)"]) * 1000
    rows.append(["the rest of verdict_for (limits, syntax, device, display focus)",
                 total - sum(row[1] for row in rows if not row[0].startswith(" "))])
    rows.append(["verdict_for, all", total])
    print_table(["step", "ms p50"], rows)
    base = statistics.median(floor)
    print(f"\nfloor `python -c 'import torch'` p50 {base:.3f} s; verdict_for p50 {total / 1000:.3f} s "
          f"= {total / 1000 / base:.2f}x the floor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--cprofile", type=Path)
    parser.add_argument("--inside", action="store_true")
    args = parser.parse_args()
    if args.inside:
        inside(args.runs, args.cprofile)
        return
    from academy import create_app, jobs
    from academy.instance import init_instance
    from academy.jobs import grading_sandbox

    profile = cProfile.Profile() if args.cprofile else None
    rows: dict[str, list[float]] = {step: [] for step, _a, _b in STEPS}
    spent: dict[str, list[float]] = {}
    calls: dict[str, int] = {}
    floor: list[float] = []
    with tempfile.TemporaryDirectory(prefix="dla-profile-") as folder, contextlib.ExitStack() as stack:
        app = create_app(app_config(Path(folder) / "instance", SANDBOX="local", GRADING_WORKERS=2, WARM_POOL=2))
        init_instance(app)
        server = LiveServer(app)
        stack.callback(jobs.shutdown, app)
        stack.callback(server.stop)
        api = Api(server.base, make_tokens(app, 1)[0])
        api.follow(api.submit())  # the first job starts the threads; not timed
        instrument(app, profile)
        pool = grading_sandbox(app).get().pool
        for number in range(args.runs):
            floor.append(floor_s())
            pool.wait_warm()
            time.sleep(0.2)  # the last verdict's refill and clean-up are done
            MARKS.clear()
            SPENT.clear()
            CALLS.clear()
            _mark("post sent")
            body = api.follow(api.submit())
            _mark("verdict received")
            while "job ends" not in MARKS:
                time.sleep(0.01)
            if body["status"] != "done" or not body["result"]["passed"]:
                raise RuntimeError(f"unexpected verdict {body}")
            for step, start, end in STEPS:
                rows[step].append(MARKS[end] - MARKS[start])
            for name, seconds in SPENT.items():
                spent.setdefault(name, []).append(seconds)
                calls[name] = CALLS[name]
            print(f"  run {number + 1}: {rows['submit to verdict'][-1] * 1000:.0f} ms", file=sys.stderr, flush=True)
    if profile is not None:
        profile.dump_stats(args.cprofile)
    base = statistics.median(floor)
    total = statistics.median(rows["submit to verdict"])
    print(f"\nA warm verdict through the API, step by step ({EXERCISE} solution, local sandbox, warm pool of 2, "
          f"{args.runs} runs; median ms)\n")
    print_table(["step", "ms p50", "ms p90"],
                [[step, statistics.median(v) * 1000, sorted(v)[int(0.9 * (len(v) - 1))] * 1000]
                 for step, v in rows.items()])
    print("\nInside those steps (median ms per verdict, all calls):\n")
    print_table(["call", "ms p50", "calls per verdict"],
                [[name, statistics.median(v) * 1000, calls[name]] for name, v in spent.items()])
    print(f"\nfloor `python -c 'import torch'` p50 {base:.3f} s; submit to verdict p50 {total:.3f} s "
          f"= {total / base:.2f}x the floor")


if __name__ == "__main__":
    main()
