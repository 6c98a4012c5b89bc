"""Fixtures shared by every test folder."""
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
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parent.parent
EXERCISES = REPO / "exercises"
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


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def run_grader(*args: str, stdin: bytes | None = None, timeout: float = 120,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the installed `grader` console script, as a user would."""
    grader = Path(sys.executable).with_name("grader")
    return subprocess.run([str(grader), *args], capture_output=True, input=stdin, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=REPO)


def check_json(exercise: str, path: Path, *extra: str) -> tuple[int, dict]:
    proc = run_grader("check", exercise, str(path), "--json", "--sandbox", "local", *extra)
    assert proc.stdout, proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


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
