"""The local sandbox: the harness in a child process of this machine.

The harness confines the learner's code itself (namespaces, a fresh uid, limits: see
grader/harness/isolation.py); this module starts it with an empty environment and a hard deadline.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from grader.course import Exercise
from sandbox import SandboxError

STARTUP_GRACE_S = 30  # importing torch and pytest, plus the checks' own reference runs
VERDICT_CAP = 1024 * 1024


class LocalSandbox:
    name = "local"

    def __init__(self, hide: list[Path] | None = None):
        self.hide = list(hide or [])

    def available(self) -> tuple[bool, str]:
        return True, ""

    def run(self, exercise: Exercise, code: str, *, seed: int | None = None) -> dict[str, Any]:
        command = [sys.executable, "-m", "grader.harness", "--exercise-dir", str(exercise.path),
                   "--submission", "-"]
        if seed is not None:
            command += ["--seed", str(seed)]
        for path in self.hide:
            command += ["--hide", str(path)]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
               "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            proc = subprocess.run(command, input=code.encode(), capture_output=True, env=env,
                                  timeout=exercise.time_limit_s + STARTUP_GRACE_S, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise SandboxError(f"the grading process did not finish within "
                               f"{exercise.time_limit_s + STARTUP_GRACE_S:g} s") from None
        if len(proc.stdout) > VERDICT_CAP:
            raise SandboxError("the grading process printed an oversized verdict")
        try:
            return json.loads(proc.stdout)
        except ValueError:
            tail = proc.stderr.decode("utf-8", "replace")[-1500:]
            raise SandboxError(f"the grading process exited {proc.returncode} without a verdict: {tail}") from None
