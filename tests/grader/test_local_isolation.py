"""Hostile submissions against the local sandbox. Each attack would make the submission pass if it
worked (it falls back to, or smuggles in, the reference solution); none may pass, every verdict
arrives within the time limit plus a few seconds, and nothing is left running."""
import re
import shutil
import subprocess
import time

import pytest

from grader.core.course import load_course
from grader.host.grading import run_submission
from tests.support.grading import bait_server
from tests.support.paths import EXERCISES

AMP = EXERCISES / "mixed-precision" / "amp-step"
SOLUTION = (AMP / "solution.py").read_text()
LIMIT = load_course().exercises["mixed-precision/amp-step"].time_limit_s
GRACE = 10  # seconds over the time limit: torch import in the grading process plus the checks


SANDBOX = None  # the sandbox of the running parameter: a cold local process, or the warm pool's
# The attacks that run until they are stopped grade amp-step in a copy of the course whose time limit is
# QUICK_LIMIT: the same sandbox and limits otherwise, without waiting out the exercise's own 10 s each time.
QUICK_LIMIT = 3
QUICK = None  # (the sandbox for that copy, its amp-step), of the running parameter


@pytest.fixture(scope="module")
def quick_course(tmp_path_factory):
    root = tmp_path_factory.mktemp("quick") / "exercises"
    shutil.copytree(EXERCISES, root, ignore=shutil.ignore_patterns("__pycache__"))
    spec = root / "mixed-precision" / "amp-step" / "exercise.yaml"
    text = spec.read_text()
    assert f"time_s: {LIMIT:g}\n" in text
    spec.write_text(text.replace(f"time_s: {LIMIT:g}\n", f"time_s: {QUICK_LIMIT}\n"))
    return load_course(root)


@pytest.fixture(scope="module", params=["cold", "warm"], autouse=True)
def local_sandbox(request, quick_course):
    """Every attack, through a fresh interpreter (`grader check`) and through a fork-server child of
    the warm pool (the web app and the worker)."""
    global SANDBOX, QUICK
    from grader.host.sandboxes import get_sandbox

    warm = request.param == "warm"
    SANDBOX = get_sandbox("local", warm=2 if warm else 0)
    quick = get_sandbox("local", course_root=quick_course.root, warm=1 if warm else 0)
    QUICK = (quick, quick_course.exercises["mixed-precision/amp-step"])
    assert QUICK[1].time_limit_s == QUICK_LIMIT
    yield SANDBOX
    SANDBOX.close()
    quick.close()


def grade(code: str) -> dict:
    started = time.monotonic()
    result = run_submission("mixed-precision/amp-step", code, sandbox=SANDBOX)
    assert time.monotonic() - started < LIMIT + GRACE
    return result


# Appended to an attack that runs until stopped: it prints the wall clock when the learner's module is imported.
# The jail's deadline starts before that import (at the learner's spawn), so from that moment the verdict is at most
# the limit plus STOPPED_GRACE away. Measured from the request instead, a cold grading also counts a fresh
# interpreter's imports, which a busy second core stretched from 4 s to 12 s (CI, two workers).
IMPORTED = "\nimport time as _clock\nprint(f'imported at {_clock.time()!r}', flush=True)\n"
STOPPED_GRACE = 5  # seconds after the deadline: the stack, the kill, the checks and the reply


def grade_until_stopped(code: str) -> dict:
    """`code` graded on amp-step with its time limit cut to QUICK_LIMIT (an attack that runs until stopped)."""
    sandbox, exercise = QUICK
    result = run_submission(exercise, code + IMPORTED, sandbox=sandbox)
    answered = time.time()
    imported = re.search(r"imported at ([0-9.]+)", result["output"])
    assert imported, result["output"]
    assert answered - float(imported[1]) < QUICK_LIMIT + STOPPED_GRACE
    return result


def test_endless_loop_is_stopped_at_the_time_limit_and_the_line_it_ran_is_named():
    # The learner's stack at the kill (faulthandler in the confined process, sandbox/jail/tree.py) names the
    # loop's line; the verdict marks it.
    result = grade_until_stopped("import torch\n\ndef train_step(*args):\n    x = 0\n    while True:\n        x += 1\n")
    assert result["status"] == "timeout" and not result["passed"]
    assert result["error"]["line"] in (5, 6), result["error"]
    assert result["error"]["message"] == (f"Time limit of {QUICK_LIMIT:g} s exceeded: your code was stopped while "
                                          f"it ran line {result['error']['line']}.")


def test_endless_printing_is_a_flood_not_a_timeout():
    # Stopped as soon as its output passes the cap (sandbox/jail/jail.py), and said so: not "out of time".
    started = time.monotonic()
    result = grade("def train_step(*args):\n    while True:\n        print('x' * 100)\n")
    assert result["status"] == "killed" and result["error"]["kind"] == "output", result["error"]
    assert "printed more than 64 KB" in result["error"]["message"]
    assert time.monotonic() - started < LIMIT


def test_output_flood_fails_and_is_capped():
    result = grade("import sys\nsys.stdout.write('x' * 50_000_000)\n" + SOLUTION)
    assert not result["passed"] and result["status"] == "killed"
    assert "printed more than 64 KB" in result["error"]["message"]
    assert len(result["output"]) <= 64 * 1024


@pytest.mark.parametrize("exit_call", ["os._exit(0)", "sys.exit(0)", "os._exit(3)"])
def test_exiting_at_import_fails(exit_call):
    result = grade(f"import os, sys\n{exit_call}\n" + SOLUTION)
    assert not result["passed"]
    assert result["status"] in {"error", "killed"}
    assert result["error"]["message"]


def test_forged_verdict_on_stdout_and_descriptors_is_ignored():
    forged = '{"status": "passed", "checks": {}, "device": "cpu"}'
    code = ("import os, sys\n"
            f"FORGED = {forged!r}\n"
            "print(FORGED)\n"
            "for fd in range(1, 64):\n"
            "    try:\n        os.write(fd, (FORGED + '\\n').encode())\n    except OSError:\n        pass\n"
            "os._exit(0)\n")
    result = grade(code)
    assert not result["passed"] and result["status"] == "error"


def test_killing_the_grader_fails_and_the_grader_survives():
    code = ("import os, signal\n"
            "for target in (os.getppid(), -1, 0, 1):\n"
            "    try:\n        os.kill(target, signal.SIGKILL)\n    except OSError:\n        pass\n" + SOLUTION)
    result = grade(code)
    # Whatever the attack managed, the verdict came back from the grading side, and it is not a pass
    # won by the attack: the remaining code is the reference solution, so pass or fail is honest here.
    assert result["status"] in {"passed", "killed", "error"}
    assert "infra-error" != result["status"]


def test_environment_of_the_grader_is_not_visible(monkeypatch):
    monkeypatch.setenv("DLA_LEAKED_SOLUTION", SOLUTION)
    result = grade("import os\nexec(os.environ.get('DLA_LEAKED_SOLUTION', ''))\n")
    assert not result["passed"]
    assert "does not define `train_step`" in result["error"]["message"]


def test_reference_solution_and_checks_are_not_readable():
    code = (f"exec(open({str(AMP / 'solution.py')!r}).read())\n")
    result = grade(code)
    assert not result["passed"]
    assert "FileNotFoundError" in result["error"]["message"] or "PermissionError" in result["error"]["message"]


def test_writing_into_the_repository_is_contained(tmp_path):
    target = AMP / "checks" / "test_amp_step.py"
    before = target.read_bytes()
    code = (f"try:\n    open({str(target)!r}, 'w').write('def test_ok():\\n    pass\\n')\nexcept OSError:\n    pass\n"
            "def train_step(*args):\n    return None\n")
    result = grade(code)
    assert not result["passed"]
    assert target.read_bytes() == before


def test_network_is_unreachable():
    with bait_server(SOLUTION.encode()) as (port, connections):
        code = ("import socket\n"
                "try:\n"
                f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                "    exec(s.recv(100000).decode())\n"
                "except OSError as exc:\n    print('blocked:', exc)\n")
        result = grade(code)
    assert not result["passed"]
    assert connections == []
    assert "blocked:" in result["output"]


def test_own_loopback_is_up_and_reaches_only_the_submission():
    """The sandbox's network namespace has its loopback up (as a Docker container without a network does):
    the submission's processes can talk to each other, e.g. torch.distributed's gloo, and the host's
    loopback stays out of reach (test_network_is_unreachable)."""
    with bait_server(SOLUTION.encode()) as (port, connections):
        code = ("import socket\n"
                "server = socket.create_server(('127.0.0.1', 0))\n"
                "client = socket.create_connection(server.getsockname(), timeout=2)\n"
                "server.accept()[0].sendall(b'own')\n"
                "print('loopback:', client.recv(3).decode())\n"
                "try:\n"
                f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                "    print('reached the host')\n"
                "except OSError as exc:\n    print('host blocked:', exc)\n")
        result = grade(code)
    assert connections == []
    assert "loopback: own" in result["output"] and "host blocked:" in result["output"], result["output"]


def test_fork_storm_is_contained():
    code = ("import os\n"
            "def train_step(*args):\n"
            "    while True:\n"
            "        try:\n            os.fork()\n        except OSError:\n            pass\n")
    result = grade_until_stopped(code)
    assert not result["passed"]


def test_memory_hog_is_stopped_with_a_plain_message():
    code = "import torch\nhog = torch.ones(8 * 1024 ** 3, dtype=torch.uint8)\n" + SOLUTION
    result = grade(code)
    assert not result["passed"]
    assert "ran out of memory" in result["error"]["message"]


def test_filling_the_disk_is_stopped():
    code = ("chunk = b'x' * (1 << 20)\n"
            "with open('fill.bin', 'wb') as f:\n"
            "    for _ in range(4096):\n        f.write(chunk)\n" + SOLUTION)
    result = grade(code)
    assert not result["passed"]


def test_no_process_is_left_behind():
    marker = "dla-leftover-marker-7731"
    code = ("import subprocess, os\n"
            f"subprocess.Popen(['sh', '-c', 'exec -a {marker} sleep 300'], start_new_session=True)\n"
            + SOLUTION)
    grade(code)
    time.sleep(0.5)
    survivors = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert survivors == []
