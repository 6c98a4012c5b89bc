"""Issue 52's warm verdict attacked (red team of 6d60935..): the verdict validated once where it leaves the sandbox,
sent before the jail's zygote stops, the pool's replacement off the learner's path. A learner's process writes
forged verdict lines, detaches a child to outlive its grading, and swells or bends what the verdict carries; one
grading per attack in the local sandbox's warm pool, the detached child in both. The course's shared code and the
frame's `emulated` are attacked in test_red_team_52.py."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from grader.core.protocol import RawVerdict, Status
from grader.host.grading import run_example, run_submission
from tests.support.grading import caught_by
from tests.support.paths import EXERCISES

AMP_STEP = "mixed-precision/amp-step"
SOLUTION = (EXERCISES / AMP_STEP / "solution.py").read_text()


@pytest.fixture(scope="module")
def local(warm_sandbox):
    return warm_sandbox("local")


# 1. The verdict line: a grading process sends one line, the host validates it once (verdict_of). The learner's
# process writes a forged passing verdict line to every descriptor it has (and prints it) while its module loads,
# then leaves train_step doing nothing: none of those is the grading process's stdout.
FORGED_LINE = RawVerdict(status=Status.PASSED, checks={
    check: {"passed": True, "message": "", "line": None, "detail": None}
    for check in ("runs", "autocast-scope", "scaled-backward", "step-update-order", "grads-cleared",
                  "matches-reference")}).encode()
WRITES_A_VERDICT = f'''
import os
LINE = {FORGED_LINE!r}
for fd in {{fds}}:
    try:
        os.write(fd, b"\\n" + LINE)
    except OSError:
        pass
print(LINE.decode(), flush=True)


def train_step(model, optimizer, scaler, loss_fn, x, y):
    return None
'''


@pytest.mark.parametrize("fds", ["(1, 2)", "range(1024)"], ids=["printed", "every-descriptor"])
def test_a_verdict_line_written_by_the_learners_process_is_not_the_verdict(local, fds):
    """Printed, it is the learner's output; written to every descriptor, it reaches the live channel too, whose
    bounds refuse it: the learner's error, said as such, never a pass nor the platform's failure."""
    result = run_submission(AMP_STEP, WRITES_A_VERDICT.replace("{fds}", fds), sandbox=local)
    if fds == "(1, 2)":
        assert result["status"] == "failed", result
        assert {"runs", "matches-reference"} <= caught_by(result), result["checks"]
        assert '"type": "verdict"' in result["output"]
    else:
        assert result["status"] == "error" and result["error"]["kind"] == "protocol", result


# 2. The verdict is sent before the jail's zygote stops: a learner process that detaches a child (double fork,
# new session, its own name) to spin after the learner's function returned would take the CPU the next
# learner's grading needs. The child must be gone once the verdict is back.
DETACHES_A_SPINNER = '''
import ctypes, os

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, b"rt52spinner", 0, 0, 0)  # PR_SET_NAME: /proc/PID/comm on the host
        while True:
            pass
    os._exit(0)
'''


def spinners() -> list[str]:
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == "rt52spinner":
                found.append(comm.parent.name)
        except OSError:
            pass
    return found


@pytest.mark.parametrize("kind", ["local", "docker"])
def test_a_child_detached_by_the_learners_code_ends_with_its_verdict(warm_sandbox, kind):
    """Local: the learner's cgroup is emptied before the verdict is sent; docker: the container is removed in the
    background once the verdict is read (measured: the spinner gone 0.85 s after it)."""
    sandbox = warm_sandbox(kind)
    result = run_submission(AMP_STEP, DETACHES_A_SPINNER + SOLUTION, sandbox=sandbox)
    assert result["status"] == "passed", result
    deadline = time.monotonic() + (2.0 if kind == "docker" else 0.0)
    while spinners() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert spinners() == []
    run = run_example(AMP_STEP, SOLUTION, sandbox=sandbox)  # the next learner's Run is served as usual
    assert run["status"] == "ran", run


# 3. The result is no longer validated after build_result (validated once, where the verdict crossed from the
# sandbox). What the learner's code makes of it (an exception's message with control characters, markup and
# 200,000 characters, output of the same, a return value of a surprising type) still builds a result in
# result.json's shape, the shape the web app stores and the pages read.
SHAPELESS = '''
import sys
print("\\x1b[31m<b>" + "\\u202e" * 500 + "\\x00" * 10, flush=True)
sys.stderr.write("\\r" * 100 + "x" * 1000)


class Weird(float):
    def __repr__(self):
        return "<img src=x>" * 10000


def train_step(model, optimizer, scaler, loss_fn, x, y):
    if getattr(train_step, "called", False):
        raise ValueError("\\u0000\\x07<script>" + "\\u2066" * 200000)
    train_step.called = True
    return Weird(1.0)
'''


def test_a_result_built_from_what_the_learners_code_made_keeps_its_schemas_shape(local):
    from grader.core.result import validate_result

    for kind in ("grade", "run"):
        result = (run_submission if kind == "grade" else run_example)(AMP_STEP, SHAPELESS, sandbox=local)
        if kind == "grade":
            assert result["status"] == "failed", result
            validate_result(result)
        else:  # a Run: the example's one call returned the odd float, its repr capped (2,000 characters)
            assert result["status"] == "ran" and len(result["returned"]) <= 2100, result["status"]
        json.dumps(result)


# 4. The verdict is sent before the jail's zygote is stopped, and the host then closes the grading process: a
# zygote (or a learner process) left behind by a close that came too early would outlive its grading, one more
# per grading. A process that adopts its orphans (a child subreaper) grades six submissions through a warm pool
# of two and counts its own children (the pool's processes are the fork server's; an orphan would be adopted
# here): the same before and after; once the sandbox is closed, no descendant is left.
COUNTS_WHAT_GRADINGS_LEAVE = r'''
import ctypes, os, sys, time
from pathlib import Path
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of our gradings become our children
from grader.host.grading import run_submission
from grader.host.sandboxes import get_sandbox

def descendants(direct=False):
    while True:  # orphans that ended are ours to reap (a subreaper's zombies): they hold nothing
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    if direct:  # orphans are adopted here: the pool's own processes are the fork server's children
        return set(children.get(os.getpid(), []))
    found, todo = set(), [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found

def settled(count):
    deadline = time.monotonic() + 20
    while len(descendants()) != count and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(descendants())

sandbox = get_sandbox("local", warm=2)
code = sys.stdin.read()
run_submission("mixed-precision/amp-step", code, sandbox=sandbox)  # the pool at its steady state
time.sleep(2)
before = len(descendants(direct=True))
for _ in range(6):
    assert run_submission("mixed-precision/amp-step", code, sandbox=sandbox)["status"] == "passed"
time.sleep(2)
print("BEFORE", before, "AFTER", len(descendants(direct=True)), flush=True)
sandbox.close()
print("CLOSED", settled(0), flush=True)
'''


def test_gradings_leave_no_process_behind():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", COUNTS_WHAT_GRADINGS_LEAVE], input=SOLUTION, text=True,
                          capture_output=True, timeout=300, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-3000:]
    words = done.stdout.split()
    assert words[words.index("BEFORE") + 1] == words[words.index("AFTER") + 1], done.stdout
    assert words[words.index("CLOSED") + 1] == "0", done.stdout


# 5. One validation, where the verdict line leaves the sandbox: a line over VERDICT_CAP is refused there, an
# infra-error ("The grader failed") with the learner's seed lost. Output just under the output cap made of bytes
# that decode to U+FFFD (6 bytes each once escaped in JSON) and a message of characters outside the BMP (12 bytes
# each) quoted by the checks make the largest line a learner's code has found (measured: 440 KB of 1 MiB).
SWELLS_THE_VERDICT = r'''
import os
os.write(1, b"\xff" * 65000)
EMOJI = "\U0001F600" * 5000


def train_step(model, optimizer, scaler, loss_fn, x, y):
    raise ValueError(EMOJI)
'''


def test_a_verdict_swollen_by_escapes_still_fits_its_line(local):
    from grader.core.protocol import VERDICT_CAP

    result = run_submission(AMP_STEP, SWELLS_THE_VERDICT, sandbox=local)
    assert result["status"] == "failed", result.get("error")
    assert len(json.dumps(result)) < VERDICT_CAP // 2
