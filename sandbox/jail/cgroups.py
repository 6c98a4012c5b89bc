"""One cgroup per submission: memory (swap included), process-count and CPU limits on everything it
starts, a freezer, a memory peak the learner cannot reset, and a kill that leaves nothing behind.
Per-process rlimits (rlimits.py) give each process the whole budget; this bounds them together.

    root = find_root(CGROUP_PARENT.get())   # once, at start-up; or CgroupUnavailable
    with SubmissionCgroup.create(root, "sub-42", memory_bytes=2 << 30, pids=64, cpus=1.0) as cg:
        ...  # the forked child calls cg.add(0) (0: itself) before dropping its uid and running code
        cg.freeze(); peak = cg.memory_peak_bytes(); cg.thaw(); oom = cg.oom_killed()
    # leaving the block kills every process left in the cgroup and removes its directories

cgroup v1 (a hierarchy per controller, /sys/fs/cgroup/<controller>): for each of memory, pids, cpu,
freezer (and cpuacct if mounted, for CPU time) the parent is this process's own cgroup in that
hierarchy, as /proc/self/cgroup names it, e.g. /sys/fs/cgroup/memory/process_api/<id>/dla-<name>, so
a submission's limits nest under whatever limit the service itself has. cgroup v2 (unified): the
parent is this process's cgroup; as only a cgroup without processes may enable controllers for its
children ("no internal processes"), find_root first moves the parent's processes (the service) into
the leaf <parent>/dla-service. An operator can name another parent with DLA_CGROUP_PARENT (read by
the caller, passed to find_root): a cgroup path such as /dla, the same in every v1 hierarchy.

Delegating a subtree to a non-root service user U (also printed by CgroupUnavailable):
  v1:  for c in memory pids cpu cpuacct freezer; do d=/sys/fs/cgroup/$c/dla
         mkdir -p $d && chown U $d $d/cgroup.procs $d/tasks; done     # then DLA_CGROUP_PARENT=/dla
       (limits root sets on /dla bound all submissions together)
  v2 with systemd: User=U and Delegate=yes in the unit's [Service] section; the service's own
       cgroup is then U's and find_root uses it (leave DLA_CGROUP_PARENT unset).
  v2 by hand:  echo '+memory +pids +cpu' > /sys/fs/cgroup/cgroup.subtree_control
       mkdir /sys/fs/cgroup/dla && cd /sys/fs/cgroup/dla
       chown U . cgroup.procs cgroup.subtree_control cgroup.threads
       echo <service pid> > cgroup.procs                               # then DLA_CGROUP_PARENT=/dla
       (a non-root process may move a process only if it can write cgroup.procs of the common
       ancestor of both cgroups, so the service must itself live in the delegated subtree)
Rules met as non-root on v1 (checked by the tests): moving a process needs write access to the
target's cgroup.procs and an euid equal to the moved process's uid or saved uid, so the child adds
itself before dropping to the learner uid. Cgroups a non-root user creates, limit and peak files
included, belong to that user: a learner with that uid that can open /sys/fs/cgroup could raise its
limits (still bounded by the parent's) or reset the v1 peak, so run learners under another uid or
hide /sys/fs/cgroup from them. Cgroups created by root have root's files, mode 0644.

Tested on Linux 6.x cgroup v1, as root and as a non-root user with a delegated subtree. UNTESTED
on a real host: the whole v2 path, co-mounted v1 hierarchies (cpu,cpuacct) and hybrid layouts;
the tests run the first two against fake trees of plain files only.
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sandbox.settings import CGROUP_PARENT

V1_REQUIRED, V1_OPTIONAL = ("memory", "pids", "cpu", "freezer"), ("cpuacct",)
V2_CONTROLLERS = ("memory", "pids", "cpu")  # freezing and killing are core v2 features
V2_LEAF = "dla-service"
CFS_PERIOD_US = 100_000
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")

HELP = """What an operator can do:
  * run the grader as root (it then nests submissions under its own cgroup);
  * delegate a subtree to the service user (uid {uid}) and start it with {env}=/dla:
      cgroup v1: for c in memory pids cpu cpuacct freezer; do d=/sys/fs/cgroup/$c/dla
                   mkdir -p $d && chown {uid} $d $d/cgroup.procs $d/tasks; done
      cgroup v2 with systemd: User= and Delegate=yes in the service unit (the service's own cgroup
                 is then delegated; leave {env} unset), or systemd-run -p Delegate=yes ...
      cgroup v2 by hand: echo '+memory +pids +cpu' > /sys/fs/cgroup/cgroup.subtree_control
                 mkdir /sys/fs/cgroup/dla && cd /sys/fs/cgroup/dla
                 chown {uid} . cgroup.procs cgroup.subtree_control cgroup.threads
                 echo <service pid> > cgroup.procs
  * or grade in the docker sandbox, where Docker limits each container."""


class CgroupUnavailable(Exception):
    """This process cannot create cgroups with the controllers a submission needs."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("cgroups unavailable:\n" + "".join(f"  - {p}\n" for p in problems)
                         + HELP.format(uid=os.geteuid(), env=CGROUP_PARENT.env))


@dataclass(frozen=True)
class CgroupRoot:
    version: int  # 1 or 2
    parents: dict[str, Path]  # controller -> directory submissions are created in (one dir on v2)
    notes: tuple[str, ...] = ()


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _write(path: Path, value: object) -> None:
    with open(path, "w") as f:  # cgroupfs refuses to create files: a missing one fails with EACCES
        f.write(str(value))


def _keys(text: str | None) -> dict[str, int]:
    """`key value` lines (memory.events, cpu.stat, memory.oom_control) as a dict."""
    pairs = (line.split() for line in (text or "").splitlines())
    return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].lstrip("-").isdigit()}


def _procs(directory: Path) -> list[int]:
    return [int(p) for p in (_read(directory / "cgroup.procs") or "").split()]


def _wait(done: Callable[[], bool], timeout: float) -> bool:
    deadline, pause = time.monotonic() + timeout, 0.0005
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    return True


def _probe(directory: Path) -> str | None:
    """Why no cgroup can be created in `directory`, or None. Only trying tells for sure."""
    if not directory.is_dir():
        return f"{directory} does not exist"
    probe = directory / f"dla-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as e:
        return f"{directory} is not writable: cannot create a cgroup in it ({e.strerror})"
    return None


def find_root(parent: str | None = None, *, mount_root: str | Path = "/sys/fs/cgroup",
              proc_self_cgroup: str | None = None) -> CgroupRoot:
    """Where this process can create submission cgroups; raises CgroupUnavailable saying why not.

    `parent` is an operator-delegated cgroup path (DLA_CGROUP_PARENT); by default this process's
    own cgroup. `mount_root` and `proc_self_cgroup` (its text) let tests use a fake tree. On v2 it
    may move the processes of the parent cgroup, this one included, into <parent>/dla-service."""
    mount = Path(mount_root)
    text = Path("/proc/self/cgroup").read_text() if proc_self_cgroup is None else proc_self_cgroup
    v1: dict[str, tuple[str, str]] = {}  # controller -> (hierarchy's controller list, own path)
    v2_path = None
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        if not controllers:
            v2_path = path
        else:
            v1.update((c, (controllers, path)) for c in controllers.split(","))
    if any(c in v1 for c in V1_REQUIRED):
        return _find_v1(mount, v1, parent)
    if v2_path is not None and (mount / "cgroup.controllers").is_file():
        return _find_v2(mount / (parent or v2_path).lstrip("/"))
    raise CgroupUnavailable([f"no cgroup v1 controller hierarchy, no cgroup v2 mount at {mount}"])


def _find_v1(mount: Path, own: dict[str, tuple[str, str]], parent: str | None) -> CgroupRoot:
    problems: list[str] = []
    notes: list[str] = []
    parents: dict[str, Path] = {}
    for c in V1_REQUIRED + V1_OPTIONAL:
        report = problems if c in V1_REQUIRED else notes
        if c not in own:
            report.append(f"no cgroup v1 {c} hierarchy in /proc/self/cgroup")
            continue
        # A co-mounted hierarchy sits at e.g. /sys/fs/cgroup/cpu,cpuacct, usually with symlinks.
        base = next((m for m in (mount / c, mount / own[c][0]) if m.is_dir()), mount / c)
        directory = base / (parent or own[c][1]).lstrip("/")
        if problem := _probe(directory):
            report.append(f"{c}: {problem}")
        else:
            parents[c] = directory
    if problems:
        raise CgroupUnavailable(problems)
    return CgroupRoot(1, parents, tuple(f"no CPU-time accounting: {n}" for n in notes))


def _find_v2(directory: Path) -> CgroupRoot:
    available = (_read(directory / "cgroup.controllers") or "").split()
    missing = [c for c in V2_CONTROLLERS if c not in available]
    problems = [f"controller {c} is not in {directory}/cgroup.controllers (the cgroup above"
                " does not delegate it)" for c in missing]
    if problem := _probe(directory):
        problems.append(problem)
    if problems:
        raise CgroupUnavailable(problems)
    enabled = {c.lstrip("+") for c in (_read(directory / "cgroup.subtree_control") or "").split()}
    todo = [c for c in V2_CONTROLLERS if c not in enabled]
    if todo:
        if _procs(directory):  # no internal processes: move ours (the service) into a leaf first
            leaf = directory / V2_LEAF
            leaf.mkdir(exist_ok=True)
            for _ in range(3):  # again for processes forked meanwhile
                for pid in _procs(directory):
                    with contextlib.suppress(OSError):  # exited, or a kernel thread at the root
                        _write(leaf / "cgroup.procs", pid)
        try:
            _write(directory / "cgroup.subtree_control", " ".join(f"+{c}" for c in todo))
        except OSError as e:
            raise CgroupUnavailable([f"cannot enable {' '.join(todo)} in {directory}/"
                                     f"cgroup.subtree_control ({e.strerror})"]) from e
    return CgroupRoot(2, {c: directory for c in (*V2_CONTROLLERS, "freezer")})


@dataclass
class SubmissionCgroup:
    """The cgroup (v1: one per hierarchy) of one submission. Make it with `create`."""
    root: CgroupRoot
    paths: dict[str, Path]  # controller -> this submission's directory
    notes: list[str] = field(default_factory=list)

    @property
    def dirs(self) -> list[Path]:
        return list(dict.fromkeys(self.paths.values()))  # one per hierarchy

    @classmethod
    def create(cls, root: CgroupRoot, name: str, memory_bytes: int, pids: int,
               cpus: float | None = None) -> SubmissionCgroup:
        """Make <parent>/dla-<name> in every hierarchy with these limits (cpus=None: no CPU cap)."""
        if not _NAME.fullmatch(name) or f"dla-{name}" == V2_LEAF:
            raise ValueError(f"bad cgroup name {name!r}")
        paths = {c: p / f"dla-{name}" for c, p in root.parents.items()}
        created: list[Path] = []
        try:
            for d in dict.fromkeys(paths.values()):
                d.mkdir()  # an existing one is someone else's: FileExistsError
                created.append(d)
            cg = cls(root, paths)
            cg._limit(memory_bytes, pids, cpus)
            return cg
        except BaseException:
            cls(root, {c: d for c, d in paths.items() if d in created}).remove()
            raise

    def _limit(self, memory_bytes: int, pids: int, cpus: float | None) -> None:
        mem, quota = self.paths["memory"], int(cpus * CFS_PERIOD_US) if cpus else None
        cpu_files: list[tuple[str, object]]
        if self.root.version == 1:
            _write(mem / "memory.limit_in_bytes", memory_bytes)  # before memsw: memsw >= limit
            swap_file, swap_value = mem / "memory.memsw.limit_in_bytes", memory_bytes
            cpu_files = [("cpu.cfs_period_us", CFS_PERIOD_US), ("cpu.cfs_quota_us", quota or -1)]
        else:
            _write(mem / "memory.max", memory_bytes)
            swap_file, swap_value = mem / "memory.swap.max", 0
            cpu_files = [("cpu.max", f"{quota or 'max'} {CFS_PERIOD_US}")]
        try:
            _write(swap_file, swap_value)
        except OSError as e:
            self.notes.append(f"swap is not limited: cannot write {swap_file.name} ({e.strerror});"
                              " the kernel lacks swap accounting (boot with swapaccount=1)")
        _write(self.paths["pids"] / "pids.max", pids)
        for name, value in cpu_files:
            _write(self.paths["cpu"] / name, value)

    def add(self, pid: int) -> None:
        """Move process `pid` (0: the calling process) into this cgroup in every hierarchy."""
        for d in self.dirs:
            _write(d / "cgroup.procs", pid)

    def freeze(self, timeout: float = 5.0) -> None:
        """Stop every process in the cgroup; returns once the kernel reports them all frozen."""
        d = self.paths["freezer"]
        if self.root.version == 1:
            _write(d / "freezer.state", "FROZEN")  # reads FREEZING until every task has stopped

            def frozen() -> bool:
                return (_read(d / "freezer.state") or "").strip() == "FROZEN"
        else:
            _write(d / "cgroup.freeze", 1)

            def frozen() -> bool:
                return _keys(_read(d / "cgroup.events")).get("frozen") == 1
        if not _wait(frozen, timeout):
            raise TimeoutError(f"{self.paths['freezer']} did not freeze within {timeout} s")

    def thaw(self) -> None:
        if self.root.version == 1:
            _write(self.paths["freezer"] / "freezer.state", "THAWED")
        else:
            _write(self.paths["freezer"] / "cgroup.freeze", 0)

    def memory_peak_bytes(self) -> int | None:
        """Highest memory use since creation (v1 counts page cache too); None if not kept."""
        name = "memory.max_usage_in_bytes" if self.root.version == 1 else "memory.peak"
        text = _read(self.paths["memory"] / name)
        return int(text) if text else None

    def cpu_seconds(self) -> float | None:
        """CPU time used by the cgroup's processes, or None without accounting (v1 cpuacct)."""
        if self.root.version == 1:
            acct = self.paths.get("cpuacct")
            text = _read(acct / "cpuacct.usage") if acct else None
            return int(text) / 1e9 if text else None
        usage = _keys(_read(self.paths["cpu"] / "cpu.stat")).get("usage_usec")
        return None if usage is None else usage / 1e6

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer killed a process of this cgroup for its memory limit."""
        mem = self.paths["memory"]
        if self.root.version == 2:
            return _keys(_read(mem / "memory.events")).get("oom_kill", 0) > 0
        control = _keys(_read(mem / "memory.oom_control"))
        if "oom_kill" in control:  # Linux 4.13+
            return control["oom_kill"] > 0
        return control.get("under_oom", 0) == 1 or int(_read(mem / "memory.failcnt") or 0) > 0

    def memory_limit_reached(self) -> bool:
        """Whether the cgroup's memory use ever reached its limit (v1 memory.failcnt, v2 memory.events max):
        without swap a cgroup there can reclaim its own file pages for longer than a deadline before the OOM
        killer strikes, so a run stopped at its deadline may have been stuck on memory all along."""
        mem = self.paths["memory"]
        if self.root.version == 2:
            return _keys(_read(mem / "memory.events")).get("max", 0) > 0
        return int((_read(mem / "memory.failcnt") or "0").strip() or 0) > 0

    def pids(self) -> list[int]:
        """Every process in the cgroup, including those that moved into a child cgroup of it."""
        found: set[int] = set()
        for d in self.dirs:
            for sub, _, _ in os.walk(d):
                found.update(_procs(Path(sub)))
        return sorted(found)

    def kill_all(self, timeout: float = 5.0) -> None:
        """SIGKILL every process in the cgroup and its children; returns once they are gone."""
        deadline = time.monotonic() + timeout
        # A stale cgroup left half-removed (its grading process killed mid-remove) may lack the freezer
        # hierarchy: then signal without freezing.
        freezer = self.paths.get("freezer")
        kill = freezer / "cgroup.kill" if freezer else None
        if self.root.version == 2 and kill is not None and kill.exists():  # Linux 5.14+: atomic, no race with fork
            _write(kill, 1)
        while self.pids():
            if time.monotonic() > deadline:
                raise TimeoutError(f"processes {self.pids()} survived SIGKILL in {self.dirs[0]}")
            if freezer is not None:
                with contextlib.suppress(TimeoutError):
                    self.freeze(timeout=1.0)  # a frozen process cannot fork while we signal the list
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if freezer is not None:
                self.thaw()  # a frozen process only acts on the SIGKILL once thawed
            _wait(lambda: not self.pids(), 0.5)

    def remove(self, timeout: float = 5.0) -> None:
        """Kill every process, then remove every directory, child cgroups first. Idempotent."""
        self.kill_all(timeout)
        deadline = time.monotonic() + timeout
        for d in self.dirs:
            for sub, _, _ in os.walk(d, topdown=False):
                while True:
                    try:
                        os.rmdir(sub)
                        break
                    except FileNotFoundError:
                        break
                    except OSError as e:  # EBUSY: a killed process has not finished exiting
                        if e.errno != errno.EBUSY or time.monotonic() > deadline:
                            raise
                        time.sleep(0.01)

    def __enter__(self) -> SubmissionCgroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
