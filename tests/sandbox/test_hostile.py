"""Hostile submissions through the docker sandbox (warm pool containers, the production path).

Each attack is written so that it would make the submission PASS if it worked: `attack()` returns
True when it escaped, and only then does `train_step` run the reference solution (or the solution the
attack smuggled in). The control test proves that a True attack really passes. Every attack must fail
with a clear message, its verdict must arrive within the time limit plus a few seconds, and nothing may
be left behind: no grading container, no process.
"""
import subprocess
import time

import pytest

from grader.core.course import load_course
from grader.host.grading import run_submission
from tests.support.grading import AMP_SOLUTION, GATED, bait_server
from tests.support.paths import EXERCISES
from tests.support.sandboxes import grading_containers

pytestmark = pytest.mark.docker

AMP = EXERCISES / "mixed-precision" / "amp-step"
LIMIT = load_course().exercises["mixed-precision/amp-step"].time_limit_s
SANDBOX = None  # the warm docker sandbox, set by the autouse fixture
GRACE = 5  # seconds over the time limit: the checks and the hand-over to the container
SOLUTION = AMP_SOLUTION
HOST_SECRET = "dla-host-secret-5d1f0c"



@pytest.fixture(autouse=True)
def sandbox(docker_sandbox):
    # Time each verdict from the hand-over to a warm container, not from waiting for a refill (on a
    # busy 2-core machine starting a container takes several seconds).
    global SANDBOX
    assert docker_sandbox.pool.wait_warm(count=1)
    SANDBOX = docker_sandbox
    return docker_sandbox


def grade(code: str) -> dict:
    started = time.monotonic()
    result = run_submission("mixed-precision/amp-step", code, sandbox=SANDBOX)
    elapsed = time.monotonic() - started
    assert result["sandbox"] == "docker"
    assert elapsed < LIMIT + GRACE, f"verdict took {elapsed:.1f} s"
    return result


def attack_result(attack: str) -> dict:
    return grade(GATED.format(attack=attack, solution=SOLUTION))


def assert_contained(result: dict) -> None:
    """Not passed, and because the attack failed (train_step raised), not for some other reason."""
    assert not result["passed"], result
    messages = [c["message"] for c in result["checks"]] + [(result["error"] or {}).get("message", "")]
    assert any("the attack was contained" in m for m in messages), (result["status"], messages)


def test_control_an_attack_that_works_passes():
    result = attack_result("def attack():\n    return True\n")
    assert result["passed"], result


ATTACKS = {
    # Network attacks aim only at loopback and local sockets: this workplace never sends test traffic to
    # other addresses. What they prove: the container has no interface but its own loopback, no route,
    # no raw sockets, and nothing of the host (its loopback services, the Docker socket) is reachable.
    "network-interfaces": '''
def attack():
    interfaces = sorted(os.listdir("/sys/class/net"))
    routes = open("/proc/net/route").read().splitlines()[1:]
    print("interfaces:", interfaces, "routes:", routes)
    return interfaces != ["lo"] or bool(routes)
''',
    "network-raw-socket": '''
def attack():
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        return True
    except OSError as exc:
        print("blocked:", exc)
        return False
''',
    "network-host-and-engine": '''
def attack():
    for address in [("127.0.0.1", 2375), ("127.0.0.1", 22), ("127.0.0.1", 5000), ("127.0.0.1", 6379)]:
        try:
            socket.create_connection(address, timeout=1).close()
            return True
        except OSError as exc:
            print("blocked:", address, exc)
    for path in ["/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock"]:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            return True
        except OSError as exc:
            print("blocked:", path, exc)
    return False
''',
    "read-reference-solution": '''
def attack():
    global _solution_step
    for root, dirs, files in os.walk("/"):
        if root.startswith(("/proc", "/sys", "/dev")):
            dirs[:] = []
            continue
        if "solution.py" in files or "mistakes" in dirs:
            try:
                namespace = {}
                exec(open(os.path.join(root, "solution.py")).read(), namespace)
                _solution_step = namespace["train_step"]
                return True
            except Exception as exc:
                print("could not use", root, exc)
    return False
''',
    "read-hidden-checks": '''
def attack():
    for path in ["/opt/grader/exercises/mixed-precision/amp-step/checks/scenario.py",
                 "/opt/grader/exercises/mixed-precision/amp-step/checks/test_amp_step.py",
                 "/opt/grader/exercises/mixed-precision/amp-step/exercise.yaml"]:
        try:
            open(path).read()
            return True
        except OSError as exc:
            print("blocked:", exc)
    return os.path.exists("/opt/grader/exercises/mixed-precision") and bool(os.listdir("/opt/grader/exercises"))
''',
    "grader-memory-stdin-and-other-submissions": '''
def attack():
    targets = ["/proc/1/environ", "/proc/1/mem", "/proc/1/fd/0", "/proc/1/fd/1", "/proc/1/maps",
               f"/proc/{os.getppid()}/environ", f"/proc/{os.getppid()}/mem", "/proc/1/root/opt/grader/exercises"]
    for path in targets:
        try:
            with open(path, "rb") as f:
                if f.read(1):
                    return True
        except OSError as exc:
            print("blocked:", path, exc)
    others = [n for n in os.listdir("/tmp") if not n.startswith("learner-")]
    return bool(others)
''',
    "host-environment": f'''
def attack():
    if any("{HOST_SECRET}" in v for v in os.environ.values()):
        return True
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if b"{HOST_SECRET}" in open(f"/proc/{{pid}}/environ", "rb").read():
                    return True
            except OSError:
                pass
    return False
''',
    "write-outside-scratch": '''
def attack():
    wrote = False
    for path in ["/opt/grader/exercises/mixed-precision/amp-step/checks/test_amp_step.py",
                 "/opt/grader/grader/harness/plugin.py", "/opt/venv/lib/python3.11/site-packages/sitecustomize.py",
                 "/etc/passwd", "/usr/lib/python3.11/os.py", "/run/grader/verdict.json", "/root/x", "/x"]:
        try:
            with open(path, "a") as f:
                f.write("# tampered")
            wrote = True
        except OSError as exc:
            print("blocked:", path, exc)
    return wrote
''',
    "privilege-escalation": '''
def attack():
    for change in (lambda: os.setuid(0), lambda: os.setgid(0), lambda: os.setresuid(0, 0, 0),
                   lambda: os.chroot("/"), lambda: os.unshare(os.CLONE_NEWUSER)):
        try:
            change()
            return True
        except (OSError, AttributeError) as exc:
            print("blocked:", exc)
    return os.geteuid() == 0
''',
    "kill-the-grader": '''
def attack():
    killed = False
    for target in (os.getppid(), 1):
        try:
            os.kill(target, signal.SIGKILL)
            killed = True
        except OSError as exc:
            print("blocked:", target, exc)
    return killed
''',
    "fork-storm": '''
def attack():
    children = 0
    try:
        for _ in range(5000):
            if os.fork() == 0:
                time.sleep(120)
                os._exit(0)
            children += 1
    except OSError as exc:
        print("blocked after", children, "children:", exc)
    return children >= 1000
''',
    # Asks for 16 GB in 256 MB mappings, writing into each: the address-space limit refuses the mapping past the
    # exercise's memory. Mappings, not bytearrays: zero-filling 2 GB took 1.3 s alone but 10 s (the time
    # limit) late in a CI run, this virtual machine's first touch of fresh memory being that slow; touched
    # memory across processes is MEMORY_HOG_MANY_PROCESSES's test.
    "memory-hog": '''
def attack():
    import mmap
    hoard = []
    try:
        for _ in range(64):
            chunk = mmap.mmap(-1, 256 * 1024 * 1024)
            chunk[0] = 1
            hoard.append(chunk)
    except (MemoryError, OSError) as exc:
        print("blocked after", len(hoard) / 4, "GB:", exc)
    got = len(hoard) / 4
    for chunk in hoard:
        chunk.close()
    return got >= 8
''',
    "disk-filling": '''
def attack():
    written = 0
    chunk = b"x" * (1 << 20)
    for directory in (".", "/tmp", "/dev/shm", "/run/grader"):
        for n in range(512):
            try:
                with open(f"{directory}/fill-{n}.bin", "wb") as f:
                    for _ in range(64):
                        f.write(chunk)
                        written += len(chunk)
            except OSError as exc:
                print("blocked:", directory, exc)
                break
    return written >= 2 * 1024 ** 3
''',
}


@pytest.mark.parametrize("name", sorted(set(ATTACKS) - {"host-environment"}))
def test_attack_is_contained(name):
    assert_contained(attack_result(ATTACKS[name]))


def test_a_server_on_the_host_cannot_be_reached():
    """A real server on the host's loopback hands out the reference solution to whoever connects."""
    with bait_server(SOLUTION.encode()) as (port, connections):
        attack = f'''
def attack():
    global _solution_step
    try:
        s = socket.create_connection(("127.0.0.1", {port}), timeout=2)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        namespace = {{}}
        exec(data.decode(), namespace)
        _solution_step = namespace["_solution_step"]
        return True
    except OSError as exc:
        print("blocked:", exc)
    return False
'''
        result = attack_result(attack)
    assert connections == []
    assert_contained(result)


def test_host_environment_is_not_visible(monkeypatch):
    monkeypatch.setenv("DLA_HOST_SECRET", HOST_SECRET)  # in the grading side's process, docker client
    assert_contained(attack_result(ATTACKS["host-environment"]))


MEMORY_HOG_MANY_PROCESSES = '''
def attack():
    # each child stays under the per-process limit; together they exceed the container's memory
    children = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            try:
                hoard = bytearray(1536 * 1024 * 1024)
                time.sleep(1)
                os._exit(0)
            except MemoryError:
                os._exit(1)
        children.append(pid)
    survived = 0
    for pid in children:
        _, status = os.waitpid(pid, 0)
        survived += os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    print("children that got 1.5 GB:", survived)
    return survived == len(children)
'''


def test_memory_hog_across_processes_is_contained_by_the_container():
    # Together the children need more than the container's memory: the kernel reclaims and kills
    # inside the container (learner processes first: oom_score_adj 1000) or the time limit stops it.
    result = attack_result(MEMORY_HOG_MANY_PROCESSES)
    assert not result["passed"]
    assert result["status"] in {"failed", "error", "timeout", "killed"}, result


def test_endless_loop_is_stopped_at_the_time_limit():
    result = grade("def attack():\n    while True:\n        pass\n\nESCAPED = attack()\n" + SOLUTION)
    assert result["status"] == "timeout" and not result["passed"]
    assert f"{LIMIT:g} s" in result["error"]["message"]


def test_output_flood_is_capped_and_fails():
    forged = '{"status": "passed", "checks": {}}'
    code = (f"import sys, os\nfor _ in range(400):\n    print({forged!r} + 'x' * 100_000)\n"
            f"    sys.stderr.write('y' * 100_000)\n" + GATED.format(attack="def attack():\n    return False\n",
                                                                     solution=SOLUTION))
    result = grade(code)
    assert not result["passed"]
    assert result["output_truncated"] and len(result["output"]) <= 70_000


@pytest.mark.parametrize("how", ["sys.exit(0)", "os._exit(0)", "os.kill(os.getpid(), signal.SIGKILL)"])
def test_exiting_at_import_fails(how):
    forged = '{"status": "passed", "checks": {}, "device": "cpu"}'
    code = (f"import os, sys, signal\nprint({forged!r})\nsys.stdout.flush()\n{how}\n" + SOLUTION
            + "\ntrain_step = _solution_step\n")
    result = grade(code)
    assert not result["passed"] and result["status"] in {"error", "killed"}
    assert result["error"]["message"]


def test_forged_verdicts_on_stdout_in_files_and_descriptors_are_ignored():
    forged = '{"status": "passed", "checks": {}, "device": "cpu"}'
    code = ("import os, struct, sys\n"
            f"FORGED = {forged!r}\n"
            "print(FORGED)\n"
            "for path in ['/proc/1/fd/1', '/dev/stdout', '/tmp/verdict.json', '/run/grader/verdict.json']:\n"
            "    try:\n        open(path, 'w').write(FORGED + '\\n')\n    except OSError as exc:\n"
            "        print('blocked:', path, exc)\n"
            "for fd in range(3, 256):\n"
            "    try:\n        os.write(fd, struct.pack('>Q', len(FORGED)) + FORGED.encode())\n"
            "    except OSError:\n        pass\n"
            "os._exit(0)\n")
    result = grade(code)
    assert not result["passed"] and result["status"] == "error"


def test_processes_started_by_the_code_are_not_left_behind():
    marker = "dla-docker-leftover-4471"
    attack = f'''
def attack():
    subprocess.Popen(["sh", "-c", "exec -a {marker} sleep 300"], start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(300)
        os._exit(0)
    return False
'''
    assert_contained(attack_result(attack))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        survivors = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
        if not survivors:
            break
        time.sleep(0.2)
    assert survivors == []


def test_no_graded_container_is_left_behind(warm_pool):
    """Runs last: every container that graded one of the attacks above is gone; only the pool's
    waiting ones remain (and the pool fixture checks that closing it removes those too)."""
    deadline = time.monotonic() + 20
    while True:
        leftovers = set(grading_containers()) - set(warm_pool.waiting())
        if not leftovers or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert leftovers == set()
    assert warm_pool.started_total >= len(ATTACKS) + 8  # one container per submission, never reused
