"""The attacks that beat the old local sandbox, against the confined one: each submission would PASS if
its attack worked (it then runs the reference solution it smuggled in or falls back to); none may.
Every attack runs as root (a warm fork-server child, the web app's path) and as an unprivileged user
with an operator-delegated cgroup subtree (a warm pool kept by a service run as that user, as `setpriv` runs
it; `grader check`'s cold process as that user grades the control, the service user's files, the daemon and
the refusals). Without a cgroup the local sandbox is refused with a message saying what to do; `--sandbox
unconfined` says what it is.
The host kinds that cannot confine at all (no user namespaces, an unprivileged container) are in
tests/sandbox/test_host_kinds.py."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from grader.host.grading import run_submission
from tests.support.grading import gated
from tests.support.paths import EXERCISES, REPO

AMP = EXERCISES / "mixed-precision" / "amp-step"
NOBODY = 65534
CGROUP = Path("/sys/fs/cgroup")


ATTACKS = {
    # Reference solutions through the repository's git history (git refuses a foreign-owned repository
    # unless told safe.directory=*).
    "git-history": f'''
def attack():
    config = "/tmp/gitconfig"
    open(config, "w").write("[safe]\\n\\tdirectory = *\\n")
    env = {{"GIT_CONFIG_GLOBAL": config, "PATH": "/usr/bin:/bin", "HOME": "/tmp"}}
    for repo in ({str(REPO)!r}, "/work/main", "/tmp/ci-clone"):
        if os.path.exists(repo + "/.git"):
            return True
        try:
            proc = subprocess.run(["git", "-C", repo, "show", "HEAD:exercises/mixed-precision/amp-step/solution.py"],
                                  capture_output=True, env=env)
        except OSError:
            continue
        if proc.returncode == 0:
            return True
    return False
''',
    # Anything of the checkout besides the grader package: the course, the web instance folder (database,
    # secret key), the platform's code and configuration.
    "repository-files": f'''
def attack():
    return any(os.path.exists({str(REPO)!r} + "/" + name)
               for name in ("exercises", "instance", "platform", ".git", "pyproject.toml", "scripts"))
''',
    # The exercise folder found from the probe's own modules, then its solution read.
    "scenario-module-path": '''
def attack():
    import pathlib
    folder = pathlib.Path(sys.modules["scenario"].__file__).parent.parent
    try:
        exec((folder / "solution.py").read_text(), {})
        return True
    except OSError:
        return False
''',
    # The build context deploy/build-stack leaves behind, and any other copy of the course under /var.
    "build-context": '''
def attack():
    for root in ("/var/cache/dla", "/var/lib/docker", "/var"):
        for dirpath, _dirs, files in os.walk(root):
            if "solution.py" in files:
                return True
    return os.path.exists("/var")
''',
    # Undo the mounts to see what they hide (the old sandbox's covers came off with umount2).
    "unmount": f'''
def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    targets = [line.split()[4] for line in open("/proc/self/mountinfo")]
    for target in sorted(targets, key=len, reverse=True) + ["/"]:
        libc.umount2(target.encode(), 2)
    return os.path.exists({str(AMP / "solution.py")!r}) or os.path.exists("/work") and any(
        "exercises" in dirs for _root, dirs, _files in os.walk("/work"))
''',
    # A new user namespace would give back every capability (and with it mount and unshare).
    "new-user-namespace": '''
def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.unshare(0x10000000 | 0x00020000) == 0
''',
    # The host's processes and their command lines.
    "host-processes": '''
def attack():
    pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    lines = []
    for pid in pids:
        try:
            lines.append(open(f"/proc/{pid}/cmdline", "rb").read())
        except OSError:
            pass
    return len(pids) > 2 or any(b"pytest" in line or b"grader" in line for line in lines)
''',
    # Every process of the submission must be counted against one memory limit: three children
    # holding 1.2 GB each under the exercise's 2048 MB.
    "memory-across-processes": '''
def attack():
    ready_r, ready_w = os.pipe()
    children = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            try:
                block = b"x" * (1200 * 1024 * 1024)
                os.write(ready_w, b"1")
                time.sleep(3)
            finally:
                os._exit(0)
        children.append(pid)
    os.close(ready_w)
    got = b""
    deadline = time.monotonic() + 6
    # Wait at most until the deadline: a child stuck at the memory limit keeps its end of the pipe open until
    # the OOM killer strikes, and a blocking read then waited past the time limit (a plain timeout, in CI).
    import select
    while len(got) < 3:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([ready_r], [], [], left)[0]:
            break
        chunk = os.read(ready_r, 3)
        if not chunk:
            break
        got += chunk
    return len(got) >= 3
''',
    # Confined for real: no privilege to gain, the kernel surface filtered.
    "no-new-privs-and-seccomp": '''
def attack():
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
    return status["NoNewPrivs"].strip() != "1" or status["Seccomp"].strip() != "2" \\
        or int(status["CapEff"], 16) != 0 or int(status["CapBnd"], 16) != 0
''',
}

SECRET = "dla-instance-secret-93c1"
SHM_KEY = 0x0D1A5EC7
SHM_ATTACK = f'''
libc = ctypes.CDLL(None, use_errno=True)
shmid = libc.shmget({SHM_KEY}, 64 * 1024 * 1024, 0o1000 | 0o666)
print("shmget", shmid)
def attack():
    return False
'''


def assert_contained(result: dict) -> None:
    """Not passed, and because the attack failed (train_step raised) or the sandbox stopped it."""
    assert not result["passed"], result
    assert result["status"] != "infra-error", result["error"]
    messages = [c["message"] for c in result["checks"]] + [(result["error"] or {}).get("message", "")]
    assert any("the attack was contained" in m or "memory" in m for m in messages), (result["status"], messages)


def shm_keys() -> set[int]:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[0]) for line in lines}


# -- as root: a warm fork-server child, as the web app and the worker grade ---------------------------

@pytest.fixture(scope="module")
def root_sandbox():
    from grader.host.sandboxes import get_sandbox

    if os.geteuid() != 0:
        pytest.skip("runs as root (CI does)")
    sandbox = get_sandbox("local", warm=1)
    yield sandbox
    sandbox.close()


def test_control_an_attack_that_works_passes(root_sandbox):
    result = run_submission("mixed-precision/amp-step", gated("def attack():\n    return True\n"), sandbox=root_sandbox)
    assert result["passed"], result


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_as_root(root_sandbox, name):
    assert_contained(run_submission("mixed-precision/amp-step", gated(ATTACKS[name]), sandbox=root_sandbox))


def test_the_web_instance_folder_is_not_in_view(tmp_path):
    from grader.host.sandboxes import get_sandbox

    instance = tmp_path / "instance"
    instance.mkdir()
    (instance / "secret_key").write_text(SECRET)
    attack = f"def attack():\n    try:\n        return open({str(instance / 'secret_key')!r}).read() == {SECRET!r}\n" \
             f"    except OSError:\n        return False\n"
    sandbox = get_sandbox("local", hide=[instance])
    assert_contained(run_submission("mixed-precision/amp-step", gated(attack), sandbox=sandbox))


def test_system_v_shared_memory_dies_with_the_submission(root_sandbox):
    before = shm_keys()
    result = run_submission("mixed-precision/amp-step", gated(SHM_ATTACK), sandbox=root_sandbox)
    assert "shmget" in result["output"] and "shmget -1" not in result["output"], result["output"]
    assert SHM_KEY not in shm_keys() - before, "a segment made by learner code outlived it on the host"


# -- as an unprivileged user, with a delegated cgroup subtree -----------------------------------------

@pytest.fixture(scope="module")
def nobody(tmp_path_factory):
    """A venv of the system interpreter that user 65534 can run, borrowing this checkout's packages,
    and a cgroup subtree delegated to that user the way docs/sandbox.md tells an operator to."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists():
        pytest.skip("needs root, setpriv and /usr/bin/python3 to act as another user")
    if not (CGROUP / "memory" / "cgroup.procs").exists():
        pytest.skip("the delegation below is written for cgroup v1 (this machine's); v2 is untested")
    home = Path(tempfile.mkdtemp(prefix="dla-nobody-"))
    home.chmod(0o755)
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(home / "venv")], check=True)
    site_packages = next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
    pth = next((home / "venv" / "lib").glob("python3*/site-packages")) / "dla.pth"
    pth.write_text(f"import site; site.addsitedir({str(site_packages)!r})\n")
    parent = f"/dla-test-{os.getpid()}"
    for controller in ("memory", "pids", "cpu", "cpuacct", "freezer"):
        folder = CGROUP / controller / parent.lstrip("/")
        if (CGROUP / controller).is_dir():
            folder.mkdir(exist_ok=True)
            for path in (folder, folder / "cgroup.procs", folder / "tasks"):
                os.chown(path, NOBODY, NOBODY)
    yield home, parent
    for controller in ("memory", "pids", "cpu", "cpuacct", "freezer"):
        folder = CGROUP / controller / parent.lstrip("/")
        for child in sorted(folder.glob("*/"), reverse=True) if folder.is_dir() else []:
            if child.is_dir():
                child.rmdir()
        if folder.is_dir():
            folder.rmdir()
    shutil.rmtree(home)


def submission_of_nobody(home: Path, name: str, code: str) -> Path:
    """`code` as a file user 65534 can read, in its home."""
    path = home / f"{name}.py"
    path.write_text(code)
    path.chmod(0o644)
    return path


def run_as_nobody(nobody, *python_args: str, delegated: bool = True,
                  timeout: float = 120) -> subprocess.CompletedProcess:
    """The nobody venv's python with `python_args`, as uid 65534 (setpriv), with the delegated cgroup subtree
    unless `delegated` is False."""
    home, parent = nobody
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **({"DLA_CGROUP_PARENT": parent} if delegated else {})}
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           str(home / "venv" / "bin" / "python"), *python_args],
                          capture_output=True, env=env, cwd="/", timeout=timeout)


def check_as_nobody(nobody, code: str, *args: str, delegated: bool = True,
                    name: str = "submission") -> tuple[int, dict, str]:
    submission = submission_of_nobody(nobody[0], name, code)
    proc = run_as_nobody(nobody, "-m", "grader.host.cli", "check", "mixed-precision/amp-step", str(submission),
                         "--json", *args, delegated=delegated)
    return proc.returncode, json.loads(proc.stdout or b"{}"), proc.stderr.decode()


def test_control_as_nobody_an_attack_that_works_passes(nobody):
    code, result, err = check_as_nobody(nobody, gated("def attack():\n    return True\n"), "--sandbox", "local")
    assert code == 0 and result["passed"] and result["sandbox"] == "local", (result, err)


WORKS = "control-that-works"  # the service's control: an attack that works passes (so a contained one means it)
# A service run as an unprivileged user (the web app's or the worker's): a warm pool of 2, grading every file it
# is given, two at a time, one JSON line per file.
SERVICE_AS_NOBODY = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from grader.host.grading import run_submission
from grader.host.sandboxes import get_sandbox

sandbox = get_sandbox("local", warm=2)
try:
    def grade(path):
        return path, run_submission("mixed-precision/amp-step", open(path).read(), sandbox=sandbox)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for path, result in pool.map(grade, sys.argv[1:]):
            print(json.dumps({"path": path, "result": result}), flush=True)
finally:
    sandbox.close()
"""


@pytest.fixture(scope="module")
def attacks_as_nobody(request, nobody) -> dict[str, dict]:
    """Every selected attack graded as nobody by a service's warm pool (SERVICE_AS_NOBODY), by name: one torch
    start-up for the pool instead of one per attack. The cold path as nobody (`grader check`) is the control's,
    the daemon's and the refusals' below."""
    names = [item.callspec.params["name"] for item in request.session.items
             if item.originalname == "test_attack_as_nobody" and hasattr(item, "callspec")]
    attacks = {**{name: ATTACKS[name] for name in names}, WORKS: "def attack():\n    return True\n"}
    paths = {name: submission_of_nobody(nobody[0], f"attack-{name}", gated(attack)) for name, attack in attacks.items()}
    proc = run_as_nobody(nobody, "-c", SERVICE_AS_NOBODY, *map(str, paths.values()), timeout=300)
    graded = {line["path"]: line["result"] for line in map(json.loads, (
        text for text in proc.stdout.decode().splitlines() if text.startswith('{"path"')))}
    return {name: graded.get(str(path), {"stderr": proc.stderr.decode()[-3000:]}) for name, path in paths.items()}


def test_control_as_nobody_through_a_service_pool_an_attack_that_works_passes(attacks_as_nobody):
    result = attacks_as_nobody[WORKS]
    assert "stderr" not in result, result.get("stderr")
    assert result["passed"] and result["sandbox"] == "local", result


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_as_nobody(attacks_as_nobody, name):
    result = attacks_as_nobody[name]
    assert "stderr" not in result, result.get("stderr")
    assert attacks_as_nobody[WORKS].get("passed"), "the same service's control did not pass"
    assert_contained(result)


def test_files_of_the_service_user_are_out_of_reach_of_code_with_the_same_uid(nobody):
    # As non-root, learner code runs under the service's own uid: file permissions protect nothing,
    # only the view does (the old sandbox leaked the web app's secret key and database this way).
    home, _ = nobody
    instance = home / "instance"
    instance.mkdir(exist_ok=True)
    (instance / "secret_key").write_text(SECRET)
    for path in (instance, instance / "secret_key"):
        os.chown(path, NOBODY, NOBODY)
    (instance / "secret_key").chmod(0o600)
    attack = f"def attack():\n    try:\n        return open({str(instance / 'secret_key')!r}).read() == {SECRET!r}\n" \
             f"    except OSError:\n        return False\n"
    _, result, err = check_as_nobody(nobody, gated(attack), "--sandbox", "local")
    assert result, err
    assert_contained(result)


def test_a_daemon_started_as_nobody_does_not_outlive_the_verdict(nobody):
    marker = "dla-nobody-daemon-5521"
    attack = (f"subprocess.Popen(['sh', '-c', 'exec -a {marker} sleep 300'], start_new_session=True)\n"
              "def attack():\n    return False\n")
    check_as_nobody(nobody, gated(attack), "--sandbox", "local")
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout == b""


def test_without_a_cgroup_the_local_sandbox_is_refused_with_what_to_do(nobody):
    for sandbox in ("local", "auto"):
        code, result, err = check_as_nobody(nobody, gated("def attack():\n    return True\n"), "--sandbox", sandbox,
                                            delegated=False)
        assert code == 3 and result["status"] == "infra-error", result
        message = result["error"]["message"]
        assert "the local sandbox is refused" in message and "no cgroup for submissions" in message
        assert "DLA_CGROUP_PARENT" in message and "docker sandbox" in message
        assert "--sandbox unconfined" in err


def test_unconfined_is_explicit_and_says_so_in_the_result(nobody):
    code, result, _ = check_as_nobody(nobody, (AMP / "solution.py").read_text(), "--sandbox", "unconfined",
                                      delegated=False)
    assert code == 0 and result["sandbox"] == "unconfined"
    assert any("UNCONFINED" in note for note in result["grader_notes"])


def test_services_never_grade_unconfined(tmp_path):
    from academy import create_app, jobs
    from academy.jobs import grading_sandbox
    from sandbox import SandboxError

    app = create_app({"INSTANCE_PATH": str(tmp_path / "instance"), "SANDBOX": "unconfined", "SECRET_KEY": "t",
                      "TESTING": True})
    with pytest.raises(SandboxError, match="never|grade with one of auto, local, docker"):
        grading_sandbox(app).get()
    jobs.shutdown(app)


def _gone_grading_process_cgroup():
    """(cgroup root, a submission cgroup named after a grading process that has exited)."""
    from sandbox.jail import cgroups

    if os.geteuid() != 0:
        pytest.skip("runs as root (CI does)")
    root = cgroups.find_root()
    gone = subprocess.Popen(["true"])
    gone.wait()
    return root, cgroups.SubmissionCgroup.create(root, f"sub-{gone.pid}-0", memory_bytes=64 << 20, pids=8)


def test_cgroups_of_grading_processes_that_are_gone_are_removed():
    # A grading process stopped at its deadline never removes its submission's cgroup; the next one
    # to start does, so a long-running service does not collect them.
    from sandbox.jail import cgroups
    from sandbox.jail.jail import remove_stale_cgroups

    root, stale = _gone_grading_process_cgroup()
    live = cgroups.SubmissionCgroup.create(root, f"sub-{os.getpid()}-99", memory_bytes=64 << 20, pids=8)
    try:
        assert stale.paths["memory"].name[len("dla-"):] in remove_stale_cgroups(root)
        assert not any(path.exists() for path in stale.dirs)
        assert all(path.exists() for path in live.dirs), "a live grading process's cgroup was removed"
    finally:
        live.remove()
        stale.remove()


def test_a_half_removed_stale_cgroup_is_removed_too():
    # Killed in the middle of its remove(), a grading process can leave its cgroup in some hierarchies
    # only (seen: the memory controller's alone); the sweep must not fail on the missing freezer.
    from sandbox.jail.jail import remove_stale_cgroups

    root, stale = _gone_grading_process_cgroup()
    try:
        for path in stale.dirs:
            if path != stale.paths["memory"]:
                path.rmdir()
        assert stale.paths["memory"].name[len("dla-"):] in remove_stale_cgroups(root)
        assert not any(path.exists() for path in stale.dirs)
    finally:
        stale.remove()
