"""Per-submission cgroups (grader/harness/cgroups.py).

cgroup v2 runs against a fake tree of plain files (no v2 host here); cgroup v1 runs for real when
/sys/fs/cgroup/memory is a v1 mount and we are root, including a non-root service user with a
subtree delegated the way an operator would. Every cgroup a test makes is removed by a finalizer."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from sandbox.jail.cgroups import CgroupRoot, CgroupUnavailable, SubmissionCgroup, find_root
from tests.support.paths import REPO

PY = "/usr/bin/python3"  # a system interpreter an unprivileged uid can execute
NOBODY = 65534
MB = 1 << 20
V1_HIERARCHIES = ("memory", "pids", "cpu", "cpuacct", "freezer")
SERVICE = "0::/system.slice/dla.service\n"


# ---------------------------------------------------------------- cgroup v2, fake tree

def fake_v2(mount: Path, path: str = "system.slice/dla.service", procs: str = "",
            controllers: str = "cpuset cpu io memory hugetlb pids", enabled: str = "") -> Path:
    directory = mount / path
    directory.mkdir(parents=True)
    (mount / "cgroup.controllers").write_text(controllers + "\n")
    (directory / "cgroup.controllers").write_text(controllers + "\n")
    (directory / "cgroup.subtree_control").write_text(enabled + "\n")
    (directory / "cgroup.procs").write_text(procs)
    return directory


def test_v2_moves_the_service_into_a_leaf_then_enables_controllers(tmp_path):
    service = fake_v2(tmp_path, procs="4242\n")
    root = find_root(mount_root=tmp_path, proc_self_cgroup=SERVICE)
    assert root.version == 2 and set(root.parents.values()) == {service}
    assert (service / "dla-service" / "cgroup.procs").read_text() == "4242"
    assert sorted((service / "cgroup.subtree_control").read_text().split()) == [
        "+cpu", "+memory", "+pids"]


def test_v2_explicit_parent_with_controllers_already_enabled_is_left_alone(tmp_path):
    parent = fake_v2(tmp_path, path="dla", enabled="cpu memory pids")
    root = find_root("/dla", mount_root=tmp_path, proc_self_cgroup="0::/user.slice\n")
    assert set(root.parents.values()) == {parent}
    assert not (parent / "dla-service").exists()
    assert (parent / "cgroup.subtree_control").read_text() == "cpu memory pids\n"


def test_v2_limits_and_readings(tmp_path):
    service = fake_v2(tmp_path)
    root = find_root(mount_root=tmp_path, proc_self_cgroup=SERVICE)
    cg = SubmissionCgroup.create(root, "abc", memory_bytes=64 * MB, pids=8, cpus=0.5)
    sub = service / "dla-abc"
    assert cg.dirs == [sub] and cg.notes == []
    files = ("memory.max", "memory.swap.max", "pids.max", "cpu.max")
    written = {f: (sub / f).read_text() for f in files}
    assert written == {"memory.max": str(64 * MB), "memory.swap.max": "0", "pids.max": "8",
                       "cpu.max": "50000 100000"}
    uncapped = SubmissionCgroup.create(root, "nocap", memory_bytes=MB, pids=1, cpus=None)
    assert (uncapped.paths["cpu"] / "cpu.max").read_text() == "max 100000"

    cg.add(1234)
    assert (sub / "cgroup.procs").read_text() == "1234" and cg.pids() == [1234]
    assert cg.memory_peak_bytes() is None and cg.cpu_seconds() is None and not cg.oom_killed()
    assert not cg.memory_limit_reached()
    (sub / "memory.peak").write_text("5000000\n")
    (sub / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\n")
    (sub / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert cg.memory_peak_bytes() == 5_000_000 and cg.cpu_seconds() == 1.5 and cg.oom_killed()
    assert cg.memory_limit_reached()

    (sub / "cgroup.events").write_text("populated 1\nfrozen 0\n")
    with pytest.raises(TimeoutError):
        cg.freeze(timeout=0.05)
    (sub / "cgroup.events").write_text("populated 1\nfrozen 1\n")
    cg.freeze()
    assert (sub / "cgroup.freeze").read_text() == "1"
    cg.thaw()
    assert (sub / "cgroup.freeze").read_text() == "0"

    (sub / "cgroup.procs").write_text("")
    (sub / "cgroup.kill").write_text("")
    cg.kill_all()
    assert (sub / "cgroup.kill").read_text() == "1"


def test_v2_missing_controller_is_explained(tmp_path):
    fake_v2(tmp_path, controllers="cpu io memory")
    with pytest.raises(CgroupUnavailable) as caught:
        find_root(mount_root=tmp_path, proc_self_cgroup=SERVICE)
    message = str(caught.value)
    assert "controller pids is not in" in message and "memory is not" not in message
    for remedy in ("run the grader as root", "Delegate=yes", "chown", "cgroup.subtree_control",
                   "DLA_CGROUP_PARENT=/dla", "docker sandbox"):
        assert remedy in message


def as_nobody(script: str, *args: str) -> subprocess.CompletedProcess:
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged uid with setpriv")
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           PY, "-c", script, *args], capture_output=True, text=True, timeout=30,
                          cwd="/", env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_v2_unwritable_parent_is_explained():
    mount = Path(tempfile.mkdtemp(prefix="dla-fake-v2-"))  # pytest's tmp_path is root-only
    try:
        mount.chmod(0o755)
        fake_v2(mount)
        proc = as_nobody(
            "import sys\nfrom sandbox.jail.cgroups import find_root, CgroupUnavailable\n"
            f"try: find_root(mount_root=sys.argv[1], proc_self_cgroup={SERVICE!r})\n"
            "except CgroupUnavailable as e: print(e)\n", str(mount))
        assert f"{mount}/system.slice/dla.service is not writable" in proc.stdout, proc.stderr
        assert "Permission denied" in proc.stdout and "Delegate=yes" in proc.stdout
    finally:
        subprocess.run(["rm", "-rf", str(mount)], check=True)


def test_v1_layout_parsing_and_missing_hierarchy(tmp_path):
    for d in ("memory/svc/1", "cpu,cpuacct", "freezer", "pids/dla"):
        (tmp_path / d).mkdir(parents=True)
    own = "9:name=systemd:/\n4:memory:/svc/1\n1:cpu,cpuacct:/\n6:freezer:/\n0::/\n"
    with pytest.raises(CgroupUnavailable, match="no cgroup v1 pids hierarchy"):
        find_root(mount_root=tmp_path, proc_self_cgroup=own)
    root = find_root(mount_root=tmp_path, proc_self_cgroup=own + "8:pids:/\n")
    assert root.version == 1 and root.parents == {
        "memory": tmp_path / "memory/svc/1", "pids": tmp_path / "pids",
        "freezer": tmp_path / "freezer", "cpu": tmp_path / "cpu,cpuacct",
        "cpuacct": tmp_path / "cpu,cpuacct"}
    with pytest.raises(CgroupUnavailable, match="memory/dla does not exist"):
        find_root("/dla", mount_root=tmp_path, proc_self_cgroup=own + "8:pids:/\n")
    for d in ("memory/dla", "cpu,cpuacct/dla", "freezer/dla"):
        (tmp_path / d).mkdir()
    delegated = find_root("/dla", mount_root=tmp_path, proc_self_cgroup=own + "8:pids:/\n")
    assert delegated.parents["memory"] == tmp_path / "memory/dla"
    assert delegated.parents["cpuacct"] == tmp_path / "cpu,cpuacct/dla"


# ---------------------------------------------------------------- cgroup v1, for real

def v1_mounted() -> bool:
    mounts = Path("/proc/mounts").read_text().splitlines()
    return any(line.split()[1:3] == ["/sys/fs/cgroup/memory", "cgroup"] for line in mounts)


needs_v1_root = pytest.mark.skipif(
    not v1_mounted() or os.geteuid() != 0,
    reason="needs root and a cgroup v1 memory hierarchy mounted at /sys/fs/cgroup/memory")


def scrub(top: Path) -> None:
    """Last-resort cleanup that does not trust the module under test."""
    for sub, _, _ in os.walk(top, topdown=False):
        if (Path(sub) / "freezer.state").exists():
            (Path(sub) / "freezer.state").write_text("THAWED")  # frozen tasks ignore SIGKILL
        procs = Path(sub) / "cgroup.procs"
        for pid in procs.read_text().split() if procs.exists() else []:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        for _ in range(250):
            try:
                os.rmdir(sub)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)


class Box:
    """Cgroups and processes a test made, all removed at the end whatever happened."""

    def __init__(self, root: CgroupRoot):
        self.root, self.cgroups, self.procs = root, [], []

    def cgroup(self, memory_bytes: int = 256 * MB, pids: int = 64, cpus: float | None = None):
        name = f"test-{os.getpid()}-{len(self.cgroups)}"
        cg = SubmissionCgroup.create(self.root, name, memory_bytes, pids, cpus)
        self.cgroups.append(cg)
        return cg

    def spawn(self, cg: SubmissionCgroup, code: str, *args: str, drop_to_nobody: bool = False,
              **popen) -> subprocess.Popen:
        def enter() -> None:  # in the child, before exec: join the cgroup, then drop privileges
            cg.add(0)
            if drop_to_nobody:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
        proc = subprocess.Popen([PY, "-c", code, *args], preexec_fn=enter, text=True,
                                env={"PATH": "/usr/bin:/bin"}, **popen)
        self.procs.append(proc)
        return proc

    def run(self, cg: SubmissionCgroup, code: str, *args: str, **kw) -> tuple[int, str]:
        proc = self.spawn(cg, code, *args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)
        out, _ = proc.communicate(timeout=30)
        return proc.returncode, out

    def close(self) -> None:
        errors = []
        for cg in self.cgroups:  # first: a process left frozen would not die of SIGKILL
            try:
                cg.remove()
            except Exception as e:  # noqa: BLE001 - still a failure of the test, once everything is gone
                errors.append(e)
            for d in cg.dirs:
                scrub(d)
        for proc in self.procs:
            proc.kill()
            proc.wait(timeout=10)
        if errors:
            raise errors[0]


@pytest.fixture
def box():
    b = Box(find_root())
    yield b
    b.close()


def wait_for(check, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
    return value


@needs_v1_root
def test_v1_nests_under_own_cgroup_and_writes_limits(box):
    own = dict(line.split(":")[1:] for line in Path("/proc/self/cgroup").read_text().splitlines())
    cg = box.cgroup(memory_bytes=64 * MB, pids=8, cpus=0.5)
    for c in V1_HIERARCHIES:
        assert cg.paths[c] == Path("/sys/fs/cgroup", c, own[c].lstrip("/"), cg.paths[c].name)
    values = {f: (cg.paths[f.split(".")[0]] / f).read_text().strip() for f in (
        "memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "pids.max", "cpu.cfs_quota_us",
        "cpu.cfs_period_us")}
    assert values == {"memory.limit_in_bytes": str(64 * MB),
                      "memory.memsw.limit_in_bytes": str(64 * MB), "pids.max": "8",
                      "cpu.cfs_quota_us": "50000", "cpu.cfs_period_us": "100000"}
    assert cg.notes == []
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass"
    code, _ = box.run(cg, busy)
    assert code == 0 and cg.cpu_seconds() >= 0.2


ALLOCATE = "b = bytearray(b'x') * (200 << 20)\nprint('allocated')"  # the copy touches every page


@needs_v1_root
def test_v1_memory_limit_kills_the_submission_only(box):
    cg = box.cgroup(memory_bytes=64 * MB)
    code, out = box.run(cg, ALLOCATE)
    assert code == -signal.SIGKILL and "allocated" not in out
    assert cg.oom_killed()
    outside = subprocess.run([PY, "-c", ALLOCATE], capture_output=True, text=True, timeout=30)
    assert outside.returncode == 0 and outside.stdout == "allocated\n"


FORKS = """
import os
r, w = os.pipe()
forked = 0
for _ in range(20):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)  # until the parent exits
        os._exit(0)
    forked += 1
print(forked)
"""


@needs_v1_root
def test_v1_pids_limit_counts_every_process(box):
    cg = box.cgroup(pids=8)
    code, out = box.run(cg, FORKS)
    assert code == 0 and out.strip() == "7"  # 8 with the parent: the 9th fork failed
    wait_for(lambda: not cg.pids())


COUNTER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
n = 0
while True:
    n += 1
    if n % 5000 == 0:
        os.pwrite(fd, str(n).encode().rjust(20), 0)
"""


@needs_v1_root
def test_v1_freeze_stops_and_thaw_resumes(box, tmp_path):
    counter = tmp_path / "counter"
    cg = box.cgroup()
    proc = box.spawn(cg, COUNTER, str(counter))

    def read() -> int:
        return int(counter.read_text() or 0) if counter.exists() else 0
    wait_for(read)
    cg.freeze()
    assert (cg.paths["freezer"] / "freezer.state").read_text().strip() == "FROZEN"
    assert cg.pids() == [proc.pid]
    frozen_at = read()
    time.sleep(0.3)
    assert read() == frozen_at
    cg.thaw()
    wait_for(lambda: read() > frozen_at, timeout=2)


PEAK = """
import sys
b = bytearray(b'x') * (100 << 20)
del b
try:
    open(sys.argv[1], 'w').write('0')
except PermissionError:
    print('reset refused')
"""


@needs_v1_root
def test_v1_memory_peak_cannot_be_reset_by_the_learner(box):
    cg = box.cgroup()
    peak = cg.paths["memory"] / "memory.max_usage_in_bytes"
    code, out = box.run(cg, PEAK, str(peak), drop_to_nobody=True)
    assert (code, out) == (0, "reset refused\n")
    assert cg.memory_peak_bytes() >= 100 * MB
    st = peak.stat()
    assert st.st_uid == 0 and not st.st_mode & 0o022


ESCAPE = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))
        os.rename(sys.argv[1] + '.tmp', sys.argv[1])
        time.sleep(60)
    os._exit(0)
os.wait()
"""


def dead(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except FileNotFoundError:
        return True


@needs_v1_root
def test_v1_kill_all_reaches_a_double_forked_setsid_process(box, tmp_path):
    cg = box.cgroup()
    pidfile = tmp_path / "pid"
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # the grandchild keeps them
    box.spawn(cg, ESCAPE, str(pidfile), **quiet).wait(10)
    grandchild = int(wait_for(lambda: pidfile.exists() and pidfile.read_text()))
    assert cg.pids() == [grandchild]
    cg.kill_all()
    assert cg.pids() == [] and dead(grandchild)


@needs_v1_root
def test_v1_remove_after_an_escape_into_a_child_cgroup_leaves_nothing(box):
    cg = box.cgroup()
    proc = box.spawn(cg, "import time; time.sleep(60)")
    for d in cg.dirs:  # what a learner that could write its cgroup directory might do
        (d / "escaped").mkdir()
        (d / "escaped" / "cgroup.procs").write_text(str(proc.pid))
    assert (cg.paths["memory"] / "cgroup.procs").read_text() == "" and cg.pids() == [proc.pid]
    cg.remove()
    assert proc.wait(timeout=5) == -signal.SIGKILL
    assert len(cg.dirs) == len(V1_HIERARCHIES) and not any(d.exists() for d in cg.dirs)
    cg.remove()  # idempotent


DELEGATED = """
import os, subprocess, sys
from sandbox.jail.cgroups import CgroupUnavailable, SubmissionCgroup, find_root
try:
    find_root()
except CgroupUnavailable as e:
    print('own cgroup refused:', e)
root = find_root(sys.argv[1])
with SubmissionCgroup.create(root, 'learner', memory_bytes=64 << 20, pids=16, cpus=1.0) as cg:
    child = subprocess.run([sys.executable, '-c', 'print(open("/proc/self/cgroup").read())'],
                           preexec_fn=lambda: cg.add(0), capture_output=True, text=True, check=True)
    print(child.stdout)
    print('limit file owner', (cg.paths['memory'] / 'memory.limit_in_bytes').stat().st_uid)
    try:
        cg.add(int(sys.argv[2]))
    except PermissionError:
        print('foreign process refused')
print('removed', not any(d.exists() for d in cg.dirs))
"""


@needs_v1_root
def test_v1_delegated_subtree_for_a_non_root_service():
    name = f"dla-test-delegated-{os.getpid()}"
    parents = [Path("/sys/fs/cgroup", c, name) for c in V1_HIERARCHIES]
    bystander = subprocess.Popen(["sleep", "30"])  # root's: the service may not move it
    try:
        for d in parents:  # what the operator does, as root
            d.mkdir()
            for f in (d, d / "cgroup.procs", d / "tasks"):
                os.chown(f, NOBODY, NOBODY)
        proc = as_nobody(DELEGATED, f"/{name}", str(bystander.pid))
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout
        assert "own cgroup refused:" in out and "is not writable" in out
        for c in V1_HIERARCHIES:
            assert re.search(rf"^\d+:{c}:/{name}/dla-learner$", out, re.M), out
        assert f"limit file owner {NOBODY}" in out and "foreign process refused" in out
        assert "removed True" in out
        assert [p.name for d in parents for p in d.iterdir() if p.is_dir()] == []
    finally:
        bystander.kill()
        bystander.wait()
        for d in parents:
            if d.exists():
                scrub(d)
