"""Run the learner's code in a forked, confined child process: confined fully, or not run at all.

The grading process imports torch once, then forks (forking is ~40x cheaper than a fresh interpreter;
it must happen before any multi-threaded tensor op, or the child can deadlock). How the child is
confined is the `Confinement` the harness was started with:

NAMESPACES (the local sandbox). Every item below is applied, or the learner's code does not run and
the verdict is an infra-error naming what failed (never a silent downgrade):
  * the whole submission in its own cgroup: memory (swap included), process count and CPU for all its
    processes together; every process left in it is killed afterwards (cgroups.py);
  * new user (when not root), PID, network, mount, IPC and UTS namespaces: no network, no host
    processes, no System V IPC shared with the host, everything it starts dies with it;
  * an allowlist root built for it and entered with pivot_root (view.py): the interpreter, the grader
    package, /dev basics, its own /proc and a private size-limited /tmp, nothing else;
  * as root: a fresh unprivileged uid; not root: a second, nested user namespace, so the mounts above
    are locked and cannot be undone; either way every capability is dropped;
  * memory, file-size, process and CPU rlimits, an empty environment, none of the grader's file
    descriptors, and last `no_new_privs` with a seccomp filter (seccomp.py).

CONTAINER (inside the grader image, sandbox/docker.py): Docker provides the network, file system,
PID namespace and cgroup; namespaces and mounts are refused there. The child drops to its own uid (the
entry keeps only CAP_SETUID, CAP_SETGID and CAP_KILL), gets the rlimits and the seccomp filter, and
every process of its uid is killed afterwards.

NONE (`grader check --sandbox unconfined`, one's own code on one's own machine): rlimits only; every
result says so.
"""
from __future__ import annotations

import contextlib
import ctypes
import enum
import itertools
import json
import os
import re
import resource
import select
import signal
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from grader import settings

if TYPE_CHECKING:  # hints only: the grading process imports these when it needs them
    from grader.harness.cgroups import SubmissionCgroup
    from grader.harness.channel import Referee
    from grader.harness.view import View

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 1, 4, 24, 47, 4

OUTPUT_CAP = 64 * 1024
RESULT_CAP = 64 * 1024 * 1024
EXIT_OUT_OF_MEMORY, EXIT_CONFINEMENT = 71, 72


class Confinement(str, enum.Enum):
    NAMESPACES = "namespaces"
    CONTAINER = "container"
    NONE = "none"


UNCONFINED_NOTE = ("graded UNCONFINED (--sandbox unconfined): your code ran as your own user, with your "
                   "files and network in reach; use this only for your own code")
CONTAINER_NOTE = "graded in a single-use container: no network, read-only file system, learner code under its own uid"


@dataclass
class Limits:
    time_s: float = settings.DEFAULT_TIME_S
    memory_mb: int = settings.DEFAULT_MEMORY_MB
    max_processes: int = settings.MAX_PROCESSES
    max_file_mb: int = settings.MAX_FILE_MB
    scratch_mb: int = settings.SCRATCH_MB


@dataclass
class Outcome:
    """What came back from the learner's process."""
    payload: bytes | None  # the last frame the child wrote on its result pipe
    exit_code: int | None  # None when killed by a signal
    signal: int | None
    timed_out: bool
    output: str  # first OUTPUT_CAP bytes of stdout+stderr
    output_truncated: bool
    isolation: list[str] = field(default_factory=list)  # notes for the result
    refused: str | None = None  # why the confinement could not be applied (the code did not run)
    setup_failed: str | None = None  # `before_drop` failed: the exercise's fault, before any learner code
    out_of_memory: bool = False  # the submission's cgroup hit its memory limit
    # The learner's peak memory as the kernel counted it, read here where the learner cannot reach:
    # the submission cgroup's peak ("cgroup": only pages the learner's processes charged, not those
    # shared with the grading process it was forked from) or, without a cgroup, the largest resident
    # set of its processes reported by wait4 ("maxrss": shared pages included).
    memory_peak_bytes: int | None = None
    memory_meter: str | None = None


class _Libc:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL(None, use_errno=True)

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def unshare(self, flags: int) -> None:
        self._check(self.lib.unshare(flags), "unshare")

    def prctl(self, option: int, arg: int = 0) -> None:
        self._check(self.lib.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl {option}")

    def die_with_parent(self, expected_parent: int) -> None:
        """SIGKILL this process when its parent dies (a grading process stopped at a deadline must not
        leave its learner running). Cleared by a uid change: call it after dropping privileges."""
        self.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != expected_parent:  # the parent died before the call
            os._exit(70)

    def drop_bounding_set(self) -> None:
        """No capability can be gained again, even by exec (needs CAP_SETPCAP: call it first)."""
        for cap in range(64):
            if self.lib.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) != 0 and ctypes.get_errno() == 22:
                break  # EINVAL: past the last capability this kernel knows
        self.lib.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)

    def drop_capabilities(self) -> None:
        """Empty the effective, permitted and inheritable sets."""
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        data = (ctypes.c_uint32 * 6)()  # two all-zero {effective, permitted, inheritable} triples
        self._check(self.lib.capset(header, data), "capset")


def _write_frame(fd: int, payload: bytes) -> None:
    data = struct.pack(">Q", len(payload)) + payload
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _last_frame(data: bytes) -> bytes | None:
    """The last complete length-prefixed frame in `data`."""
    last, pos = None, 0
    while pos + 8 <= len(data):
        (size,) = struct.unpack(">Q", data[pos:pos + 8])
        if pos + 8 + size > len(data):
            break
        last = data[pos + 8:pos + 8 + size]
        pos += 8 + size
    return last


def _drain(fd: int, cap: int, sink: list[bytes], truncated: list[bool]) -> None:
    """Read `fd` to its end, keeping the first `cap` bytes: a flood must not block the writer."""
    kept = 0
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        room = cap - kept
        if len(chunk) > room:
            truncated[0] = True
        if room > 0:
            sink.append(chunk[:room])
            kept += len(sink[-1])
    os.close(fd)


def in_container() -> bool:
    """True inside the grader image, where the container provides what namespaces would."""
    return bool(settings.IN_CONTAINER.get())


def learner_uid(middle_pid: int) -> int:
    """The middle process's pid above the base (grader/settings.py): unique while it runs. Containers graded
    side by side share the host's per-uid process count (RLIMIT_NPROC): each gets its own base."""
    return settings.LEARNER_UID_BASE.get() + middle_pid


def _set_limits(limits: Limits, as_root: bool) -> None:
    address_space = _current_vm_bytes() + limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    file_bytes = limits.max_file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    cpu = int(limits.time_s) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    if as_root:  # counted per uid: only a uid of the learner's own makes it a per-submission bound
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes))
    try:  # under memory pressure, the kernel kills the learner's processes first
        Path("/proc/self/oom_score_adj").write_text("1000")
    except OSError:
        pass


def _current_vm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _drop_root(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # clears the effective and permitted capability sets


def _map_own_ids(uid: int, gid: int) -> None:
    """In a new user namespace: map our own uid and gid to themselves (no setgroups)."""
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _confine_namespaces(libc: _Libc, limits: Limits, view, as_root: bool, uid: int) -> str:  # noqa: ANN001 - private; the types are run_confined's
    """In the grandchild (pid 1 of its namespaces), before any learner code. Returns the scratch dir."""
    from grader.harness import view as views

    own_uid, own_gid = os.getuid(), os.getgid()
    views.enter(view, limits.scratch_mb, uid if as_root else None)
    _set_limits(limits, as_root)
    if not as_root:
        # A user namespace owned by the first one: the mounts made above become locked (they cannot
        # be unmounted to reveal what they cover), and the capabilities it grants are dropped below.
        libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)
        _map_own_ids(own_uid, own_gid)
    _drop_all(libc, uid if as_root else None)
    return "/tmp"


def _drop_all(libc: _Libc, uid: int | None) -> None:
    """Every capability gone: the bounding set (while CAP_SETPCAP is still held), then the uid (as root:
    that empties the effective and permitted sets), then whatever is left."""
    libc.drop_bounding_set()
    if uid is not None:
        _drop_root(uid)
    libc.drop_capabilities()


def _confine_container(libc: _Libc, limits: Limits, as_root: bool, uid: int) -> str:
    """In the grading container: the container confines; the child takes a uid and a folder of its own."""
    _set_limits(limits, as_root)
    if as_root:
        _drop_all(libc, uid)
    path = f"/tmp/learner-{uid}"
    os.mkdir(path, 0o700)
    os.chdir(path)
    return path


def run_confined(target: Callable[[], bytes], limits: Limits, confinement: Confinement,
                 view: View | None = None, before_drop: Callable[[], None] | None = None,
                 referee: Referee | None = None) -> Outcome:
    """Fork, confine, run `target` in the child and return what it produced.

    `view` (view.View): the learner's file system, for NAMESPACES. `before_drop` runs in the child
    before it is confined (load the probe there: its folder is not in the view). `target` returns the
    bytes to send back; whatever the learner's code writes elsewhere never reaches the verdict.
    What the parent learns before learner code runs (the notes, a refusal, a failed `before_drop`)
    comes over a separate pipe that the child closes first, so it can be trusted.
    `referee` (channel.Referee): serves the live channel (events, questions) while the child runs.
    """
    from grader.harness import cgroups

    cgroup = None
    if confinement is Confinement.NAMESPACES:
        try:
            cgroup = cgroups.SubmissionCgroup.create(
                cgroup_root(), f"sub-{os.getpid()}-{next(_serial)}",
                memory_bytes=limits.memory_mb * 1024 * 1024, pids=limits.max_processes, cpus=1.0)
        except (cgroups.CgroupUnavailable, OSError) as exc:
            return _refused(f"no cgroup for the submission: {exc}")
    try:
        outcome = _run(target, limits, confinement, view, before_drop, cgroup, referee)
        if cgroup is not None:
            outcome.out_of_memory = cgroup.oom_killed()
            outcome.memory_peak_bytes, outcome.memory_meter = cgroup.memory_peak_bytes(), "cgroup"
        return outcome
    finally:
        if cgroup is not None:
            cgroup.remove()  # kills whatever the submission left running, daemons included


_serial = itertools.count()
_cgroup_root = None


def cgroup_root():  # noqa: ANN201 - cgroups.CgroupRoot
    """Found once per process (inherited by the fork server's children); CgroupUnavailable says why not."""
    global _cgroup_root
    from grader.harness import cgroups

    if _cgroup_root is None:
        _cgroup_root = cgroups.find_root(settings.CGROUP_PARENT.get())
        remove_stale_cgroups(_cgroup_root)
    return _cgroup_root


STALE_NAME = re.compile(r"dla-(sub-(\d+)-\d+)")


def remove_stale_cgroups(root) -> list[str]:  # noqa: ANN001 - cgroups.CgroupRoot
    """Remove the submission cgroups of grading processes that are gone: one stopped at its deadline
    (or killed) never reached its own `remove()`. Their names carry the grading process's pid."""
    from grader.harness import cgroups

    removed = []
    names = {entry.name for parent in root.parents.values() if parent.is_dir() for entry in parent.iterdir()}
    for name in sorted(names):
        match = STALE_NAME.fullmatch(name)
        if not match or _alive(int(match.group(2))):
            continue
        stale = cgroups.SubmissionCgroup(root, {c: p / name for c, p in root.parents.items() if (p / name).is_dir()})
        try:
            stale.remove()
            removed.append(match.group(1))
        except (OSError, TimeoutError):
            pass  # the next grading process tries again
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # PermissionError: alive, under another uid
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _refused(why: str) -> Outcome:
    return Outcome(payload=None, exit_code=None, signal=None, timed_out=False, output="",
                   output_truncated=False, refused=why)


class LearnerHandle:
    """Pause and resume all of the learner's processes (for a referee timing its own side)."""

    def __init__(self, cgroup: SubmissionCgroup | None, pid: int | None, confinement: Confinement, as_root: bool,
                 uid: int) -> None:
        self.cgroup, self.pid, self.confinement, self.as_root, self.uid = cgroup, pid, confinement, as_root, uid
        self.paused_s = 0.0  # added to the learner's deadline: time it was stopped is not its time
        self._since: float | None = None

    def _signal(self, sig: int) -> None:
        if self.confinement is Confinement.CONTAINER and self.as_root:
            _signal_uid(self.uid, sig)  # every process of the learner's uid, daemons included
        elif self.pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)

    def pause(self) -> None:
        if self.cgroup is not None:
            self.cgroup.freeze()
        else:
            self._signal(signal.SIGSTOP)
        self._since = time.monotonic()

    def resume(self) -> None:
        if self._since is not None:
            self.paused_s += time.monotonic() - self._since
            self._since = None
        if self.cgroup is not None:
            self.cgroup.thaw()
        else:
            self._signal(signal.SIGCONT)


def _run(target, limits, confinement, view, before_drop, cgroup, referee=None) -> Outcome:  # noqa: ANN001 - private; the types are run_confined's
    import socket

    result_r, result_w = os.pipe()
    output_r, output_w = os.pipe()
    info_r, info_w = os.pipe()
    grader_end, learner_end = socket.socketpair() if referee is not None else (None, None)
    channel_fd = learner_end.fileno() if learner_end is not None else None
    # The helper channel: its learner-side end stays only with a process the probe forks before the
    # learner's code loads (channel.take_helper); the learner's own process closes it (channel.drop_helper).
    helper_grader_end, helper_end = socket.socketpair() if referee is not None and referee.helper_channel \
        else (None, None)
    helper_fd = helper_end.fileno() if helper_end is not None else None
    as_root = os.geteuid() == 0
    started = time.monotonic()
    grader_pid = os.getpid()
    middle = os.fork()
    if middle == 0:  # pragma: no cover - runs in the child
        _middle(target, limits, confinement, view, before_drop, as_root, cgroup,
                (result_r, result_w, output_r, output_w, info_r, info_w), grader_pid, (channel_fd, helper_fd))
    for fd in (result_w, output_w, info_w):
        os.close(fd)
    for end in (learner_end, helper_end):
        if end is not None:
            end.close()

    result_chunks: list[bytes] = []
    output_chunks: list[bytes] = []
    result_trunc, output_trunc = [False], [False]
    readers = [threading.Thread(target=_drain, args=(result_r, RESULT_CAP, result_chunks, result_trunc)),
               threading.Thread(target=_drain, args=(output_r, OUTPUT_CAP, output_chunks, output_trunc))]
    for reader in readers:
        reader.daemon = True
        reader.start()

    deadline = started + limits.time_s
    info = _read_info(info_r, deadline + 5)
    handle = LearnerHandle(cgroup, info.get("pid"), confinement, as_root, learner_uid(middle))
    serving = []
    if referee is not None:
        from grader.harness import channel

        serving.append((channel.serve_in_background(referee, grader_end, handle), grader_end))
        if helper_grader_end is not None:
            serving.append((channel.serve_in_background(referee, helper_grader_end, handle, helper=True),
                            helper_grader_end))
    status, timed_out, usage = None, False, None
    while True:
        pid, status, usage = os.wait4(middle, os.WNOHANG)
        if pid:
            break
        if time.monotonic() >= deadline + handle.paused_s:
            timed_out = True
            _kill(info.get("pid"), middle)
            _, status, usage = os.wait4(middle, 0)
            break
        if referee is not None and referee.run in referee.refused_in:
            # The learner's side sent what the grading side refuses: that is the verdict, whatever it does next.
            _kill(info.get("pid"), middle)
            _, status, usage = os.wait4(middle, 0)
            break
        time.sleep(0.005)
    if as_root and confinement is Confinement.CONTAINER:
        _kill_uid(learner_uid(middle))  # no PID namespace there: daemons would outlive the run
    for reader in readers:
        reader.join(timeout=2)
    for thread, end in serving:
        thread.join(timeout=2)
        if thread.is_alive():  # a process the learner left behind still holds its end
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            thread.join(timeout=2)

    exit_code, sig = _decode_status(status)
    refused, setup_failed = info.get("refused"), info.get("setup_failed")
    if refused is None and setup_failed is None and not info.get("confined") and not timed_out \
            and exit_code == EXIT_CONFINEMENT:
        refused = "the learner's process ended before it was confined"
    return Outcome(
        payload=None if timed_out or refused or setup_failed else _last_frame(b"".join(result_chunks)),
        exit_code=exit_code, signal=sig, timed_out=timed_out,
        output=b"".join(output_chunks).decode("utf-8", "replace"),
        output_truncated=output_trunc[0],
        isolation=info.get("notes", []), refused=refused, setup_failed=setup_failed,
        # wait4 on the middle process: the largest of its own and its waited-for children's peaks.
        memory_peak_bytes=usage.ru_maxrss * 1024 if usage is not None else None, memory_meter="maxrss",
    )


def _close_fds_except(keep: set[int]) -> None:
    """Learner code must inherit no descriptor of ours: verdict pipes, sockets, database files."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _decode_status(status: int) -> tuple[int | None, int | None]:
    """The middle process exits 128+N when the learner's process died of signal N."""
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    code = os.WEXITSTATUS(status)
    if code > 128:
        return None, code - 128
    return code, None


def _kill(grandchild: int | None, middle: int) -> None:
    # The grandchild is pid 1 of its namespace: when it dies the kernel kills everything it started.
    for pid in (grandchild, middle):
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass  # without CAP_KILL the learner's uid is swept by _kill_uid after the middle dies
    try:
        os.killpg(middle, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_uid(uid: int) -> None:
    """Kill every process of the learner's uid."""
    _signal_uid(uid, signal.SIGKILL)


def _signal_uid(uid: int, sig: int) -> None:
    """Signal every process of the learner's uid: a helper takes that uid and signals everything it
    may signal (-1)."""
    helper = os.fork()
    if helper == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            _drop_root(uid)
            os.kill(-1, sig)  # never the caller itself
            code = 0
        except BaseException:  # noqa: BLE001 - a forked helper must reach os._exit whatever happens
            pass
        os._exit(code)
    os.waitpid(helper, 0)


def _read_info(fd: int, deadline: float) -> dict:
    """The middle process reports the grandchild's pid and notes, the grandchild whether it is
    confined, one JSON line each; merged here."""
    buf = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
    os.close(fd)
    info: dict = {}
    for line in buf.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            notes = info.get("notes", []) + list(message.pop("notes", []))
            info.update(message)
            info["notes"] = notes
    return info


def _say(fd: int, message: dict) -> None:
    os.write(fd, (json.dumps(message) + "\n").encode())


def _loopback_up() -> None:
    """Bring up the new network namespace's own loopback, as Docker does for a container without a network:
    the submission's processes can then talk to each other over 127.0.0.1 (torch.distributed's gloo needs
    an interface with an address, even with a file:// store), and nothing outside the namespace is reachable
    through it. Run while the namespace's capabilities are still held; on failure the loopback stays down."""
    import fcntl
    import socket

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            request = struct.pack("16sH22x", b"lo", 0)  # struct ifreq: name, then flags; 40 bytes
            flags = struct.unpack("16sH22x", fcntl.ioctl(s, siocgifflags, request))[1]
            fcntl.ioctl(s, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))
    except OSError:
        pass


def _middle(target, limits, confinement, view, before_drop, as_root, cgroup, fds,  # noqa: ANN001 - private; the types are run_confined's
            grader_pid, channels) -> None:  # pragma: no cover  # noqa: ANN001
    result_r, result_w, output_r, output_w, info_r, info_w = fds
    try:
        os.setsid()
        os.close(result_r)
        os.close(output_r)
        os.close(info_r)
        _close_fds_except({0, 1, 2, result_w, output_w, info_w} | {fd for fd in channels if fd is not None})
        libc = _Libc()
        if cgroup is not None:
            cgroup.add(0)  # before any namespace: everything from here on is counted and killable
        if confinement is Confinement.NAMESPACES:
            flags = CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS
            uid, gid = os.getuid(), os.getgid()
            try:
                libc.unshare(flags if as_root else flags | CLONE_NEWUSER)
                if not as_root:
                    _map_own_ids(uid, gid)
                _loopback_up()
            except OSError as exc:
                _say(info_w, {"refused": f"no namespaces: {exc.strerror or exc}"})
                os._exit(EXIT_CONFINEMENT)
        libc.die_with_parent(grader_pid)
        uid = learner_uid(os.getpid())
        child = os.fork()
        if child == 0:
            _grandchild(target, limits, confinement, view, before_drop, as_root, uid, libc,
                        result_w, output_w, info_w, channels)
        notes = {Confinement.CONTAINER: [CONTAINER_NOTE], Confinement.NONE: [UNCONFINED_NOTE]}.get(confinement, [])
        _say(info_w, {"pid": child, "notes": notes})
        os.close(info_w)
        os.close(result_w)
        os.close(output_w)
        for fd in channels:
            if fd is not None:
                os.close(fd)
        _, status = os.waitpid(child, 0)
        if os.WIFSIGNALED(status):
            os._exit(128 + os.WTERMSIG(status))
        os._exit(os.WEXITSTATUS(status))
    except BaseException:  # noqa: BLE001 - a forked process must reach os._exit whatever happens
        os._exit(70)


def _grandchild(target, limits, confinement, view, before_drop, as_root, uid, libc, result_w, output_w,  # noqa: ANN001
                info_w, channels) -> None:  # pragma: no cover  # noqa: ANN001
    from grader.harness import seccomp

    code = 70
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output_w, 1)
        os.dup2(output_w, 2)
        os.close(null)
        os.close(output_w)
        sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
        sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
        os.setsid()
        if before_drop:
            try:
                before_drop()
            except Exception:  # noqa: BLE001 - reported as the exercise's failure, not the learner's
                import traceback

                _say(info_w, {"setup_failed": traceback.format_exc(limit=-3)})
                os._exit(EXIT_CONFINEMENT)
        parent = os.getppid()
        try:
            if confinement is Confinement.NAMESPACES:
                scratch = _confine_namespaces(libc, limits, view, as_root, uid)
            elif confinement is Confinement.CONTAINER:
                scratch = _confine_container(libc, limits, as_root, uid)
            else:
                _set_limits(limits, False)
                scratch = tempfile.mkdtemp(prefix="dla-unconfined-")
                os.chdir(scratch)
            libc.die_with_parent(parent)
            if confinement is not Confinement.NONE:
                # Non-dumpable, the process's /proc files are root's and no process of its uid may trace
                # it or open its memory (the seccomp filter keeps the learner from undoing this): so in
                # the container, where the memory meter is the kernel's peak resident set (wait4), the
                # learner cannot reset it through /proc/self/clear_refs; and a grading-side process the
                # probe forks before the learner's code loads (channel.take_helper) is out of its reach.
                libc.prctl(PR_SET_DUMPABLE, 0)
            if confinement is not Confinement.NONE:
                seccomp.install()  # sets no_new_privs first; the last step before learner code
        except Exception as exc:  # noqa: BLE001 - the code must not run half-confined
            _say(info_w, {"refused": f"{type(exc).__name__}: {exc}"})
            os._exit(EXIT_CONFINEMENT)
        _say(info_w, {"confined": True})
        os.close(info_w)  # learner code must not reach the parent's status pipe
        os.environ.clear()
        os.environ.update({"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8",
                           "OMP_NUM_THREADS": "1"})
        tempfile.tempdir = None  # the grading side may have cached its own (unreachable) temp folder
        if channels[0] is not None:
            from grader.harness import channel

            channel.connect(*channels)
        payload = target()
        _write_frame(result_w, payload)
        code = 0
    except MemoryError:
        code = EXIT_OUT_OF_MEMORY
    except BaseException:  # noqa: BLE001 - a forked process must reach os._exit whatever happens
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - a forked process must reach os._exit whatever happens
            pass
        os._exit(code)
