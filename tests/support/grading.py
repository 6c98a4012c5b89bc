"""The grader's tests: its console script (cold, or in this process through a warm sandbox), hostile
submissions that pass only when their attack escaped, a bait server for network attacks, and which checks
caught a submission."""
from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

from tests.support.paths import EXERCISES, REPO

# The amp-step reference solution under another name, for attacks that smuggle it in.
AMP_SOLUTION = re.sub(r"\bdef train_step\(", "def _solution_step(",
                      (EXERCISES / "mixed-precision" / "amp-step" / "solution.py").read_text())
# A hostile amp-step submission that PASSES exactly when its `attack()` returns True (it escaped): then
# train_step runs the reference solution; otherwise it raises "the attack was contained".
GATED = '''
import ctypes, os, signal, socket, subprocess, sys, time

{attack}

ESCAPED = attack()

{solution}

def train_step(model, optimizer, scaler, loss_fn, x, y):
    if ESCAPED:
        return _solution_step(model, optimizer, scaler, loss_fn, x, y)
    raise RuntimeError("the attack was contained")
'''


def gated(attack: str) -> str:
    return GATED.format(attack=attack, solution=AMP_SOLUTION)


def answer_verdict(process: Any, request: Any, time_limit_s: float, entry: Any = None) -> Any:
    """The raw verdict a started grading process (sandbox.process.EntryProcess) answers `request` with."""
    from grader.host.grading import verdict_of
    from grader.host.sandboxes import harness_entry
    from sandbox import Work

    work = Work(request.encode(), entry or harness_entry(EXERCISES), time_limit_s, 3072)
    return verdict_of(process.answer(work), time_limit_s)


def run_grader(*args: str, stdin: bytes | None = None, timeout: float = 120,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the installed `grader` console script, as a user would."""
    grader = Path(sys.executable).with_name("grader")
    return subprocess.run([str(grader), *args], capture_output=True, input=stdin, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=REPO)


def check_json(exercise: str, path: Path, *extra: str, here: Any = None) -> tuple[int, dict]:
    """`grader check EXERCISE PATH --json --sandbox local`: the console script, or `run_grader_here(here, ...)`."""
    args = ("check", exercise, str(path), "--json", "--sandbox", "local", *extra)
    proc = run_grader(*args) if here is None else run_grader_here(here, *args)
    assert proc.stdout, proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


def run_grader_here(sandbox: Any, *args: str) -> subprocess.CompletedProcess:
    """`grader ARGS` in this process (click's CliRunner): the same command, output and exit code as
    `run_grader`, except that where the command would make a new cold sandbox of `sandbox`'s kind, it grades
    through `sandbox`, a warm one the test session keeps: a fresh interpreter's torch start-up (4-5 CPU-s here)
    saved per call. The console script as a user runs it, a cold process, stays tested through `run_grader`.
    Not thread-safe (CliRunner swaps sys.stdout): call it from one thread at a time."""
    from unittest import mock

    from click.testing import CliRunner

    from grader.core.settings import exercises_root
    from grader.host.cli import main

    def the_warm_one(name: str, *, course_root: Path | None = None, warm: int = 0, **_: Any) -> Any:
        assert name == sandbox.name, f"the command asked for a {name} sandbox; this one is {sandbox.name}"
        # A pool it would own (and close), or one for another course (graded cold, silently): not this one's use.
        assert not warm and course_root in (None, exercises_root()), (warm, course_root)
        return sandbox

    with mock.patch("grader.host.sandboxes.get_sandbox", side_effect=the_warm_one) as made:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert made.called, "the command made no sandbox through get_sandbox: it did not grade through the warm one"
    return subprocess.CompletedProcess(["grader", *args], result.exit_code, result.stdout_bytes, result.stderr_bytes)


@contextlib.contextmanager
def bait_server(payload: bytes) -> Iterator[tuple[int, list[int]]]:
    """A TCP server on the host's loopback that hands `payload` (say, a reference solution) to whoever
    connects: (port, connections). A network attack that reached it would win the payload."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    connections: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            connections.append(1)
            conn.sendall(payload)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], connections
    finally:
        stop.set()
        thread.join()
        server.close()


def caught_by(result: dict) -> set[str]:
    """The checks that caught a submission: those that failed, and those reported skipped because
    another check's failure explains them (they failed too; grader/result.py shows one message)."""
    return {c["id"] for c in result["checks"]
            if c["status"] == "failed" or (c["status"] == "skipped" and c["because"] != "load")}
