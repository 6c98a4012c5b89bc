"""The grading process is bounded as the learner's is (issue 26): whatever the learner's side sends it,
it has an address space of its own (GRADER_MEMORY_MB above what it holds when grading starts) and a CPU
limit, while the learner's processes it forks still get their own, larger, memory limit."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tests.support.paths import REPO

BOUNDED = """
    import os, resource
    from grader.core.course import load_exercise
    from grader.harness.grade import _limit_self
    from grader.core.settings import GRADER_MEMORY_MB
    from sandbox.jail import Limits
    from sandbox.jail.rlimits import apply as set_limits

    from pathlib import Path
    exercise = load_exercise(Path({folder!r}), "mixed-precision/amp-step")
    _limit_self(exercise)
    try:  # the grading process itself: twice its share does not fit
        hoard = bytearray(2 * GRADER_MEMORY_MB * 2**20)
        print("grader held", len(hoard) >> 20, "MB")
    except MemoryError:
        print("grader refused")
    child = os.fork()
    if child == 0:  # the learner's process: its own limit, above the grader's share
        set_limits(Limits(memory_mb=exercise.memory_mb), as_root=False)
        try:
            hoard = bytearray((GRADER_MEMORY_MB + 256) * 2**20)
            os._exit(0)
        except MemoryError:
            os._exit(1)
    print("learner held", "more" if os.waitpid(child, 0)[1] == 0 else "less")
    print("cpu limited", resource.getrlimit(resource.RLIMIT_CPU)[0] != resource.RLIM_INFINITY)
"""


def test_the_grading_process_has_a_memory_share_of_its_own_and_a_cpu_limit():
    code = textwrap.dedent(BOUNDED.format(folder=str(REPO / "exercises" / "mixed-precision" / "amp-step")))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["grader refused", "learner held more", "cpu limited True"], proc.stdout


GRADED = """
    import resource
    from pathlib import Path
    from grader.core.course import load_exercise
    from grader.harness import grade
    from sandbox.jail import Confinement

    seen = []
    checks = grade._run_checks
    def watched(*args):  # the limits the grading process holds while it judges the learner's observations
        seen.append((resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_CPU)[0]))
        return checks(*args)
    grade._run_checks = watched
    folder = Path({folder!r})
    exercise = load_exercise(folder, "mixed-precision/amp-step")
    verdict = grade.verdict_for(exercise, (folder / "solution.py").read_text(), Confinement.NONE, seed=3)
    # What did not pass, should anything not (a failure then says which check, and why).
    print({{name: check.get("message") for name, check in verdict.checks.items() if not check.get("passed")}},
          verdict.error, verdict.problems)
    print(verdict.status.value, *(value != resource.RLIM_INFINITY for value in seen[0]))
"""


def test_a_real_grading_runs_its_checks_under_the_grading_processs_limits():
    # Through verdict_for itself, not the helper it calls: a grading that forgot to bound itself fails here.
    # With a pytest environment that would break the harness's own sessions (junitxml is a plugin it leaves out):
    # a CI run with --junitxml in PYTEST_ADDOPTS once failed this grading with pytest's usage error (exit 4).
    code = textwrap.dedent(GRADED.format(folder=str(REPO / "exercises" / "mixed-precision" / "amp-step")))
    env = {**os.environ, "PYTEST_ADDOPTS": "--junitxml=/nonexistent/junit.xml", "PYTEST_PLUGINS": "no_such_plugin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[-2] == "passed True True", proc.stdout
