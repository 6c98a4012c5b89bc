"""Run the learner's code in a forked, confined child process.

The grading process imports torch once, then forks (forking is ~40x cheaper than a fresh interpreter;
it must happen before any multi-threaded tensor op, or the child can deadlock). The child:

  * enters new PID, network and mount namespaces (as root directly; otherwise inside a new user
    namespace), so it can neither reach the network nor see or signal the grader's processes, and
    everything it starts dies with it;
  * gets a private, size-limited tmpfs as /tmp (its scratch and working directory) and has the
    exercises (reference solutions, hidden checks), the caller's hidden paths and home directories
    covered by empty mounts;
  * drops to a fresh unprivileged uid when running as root, with memory, file-size, process and
    CPU-time limits and an empty environment.

Inside the grading container (sandbox/docker.py) namespaces and mounts are not permitted: the
container itself has no network, a read-only root file system and its own PID namespace, and it is
single-use. There the harness runs as uid 0 with every capability dropped except SETUID, SETGID and KILL
(and no-new-privileges), so the child can still drop to its own uid: it cannot read the checks (root's,
mode 0700), signal or trace the grading process, or write anywhere but its private scratch folder on
the container's /tmp; when it is done every process of its uid is killed.

Whatever isolation the machine could not give is reported in `Outcome.isolation` rather than hidden.
"""
from __future__ import annotations

import ctypes
import json
import os
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
from typing import Callable

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 16384, 1 << 18
# open_tree/move_mount share these numbers on x86_64 and arm64 (Linux 5.2+).
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
MOVE_MOUNT_F_EMPTY_PATH = 0x4
UID_BASE = 200_000  # learner uids are UID_BASE + the middle process's pid: unique while it runs
# Containers graded side by side share the host's per-uid process count (RLIMIT_NPROC): the docker
# sandbox gives each container its own base through this variable.
UID_BASE_ENV = "DLA_LEARNER_UID_BASE"

OUTPUT_CAP = 64 * 1024
RESULT_CAP = 64 * 1024 * 1024


@dataclass
class Limits:
    time_s: float = 10.0
    memory_mb: int = 2048
    max_processes: int = 64
    max_file_mb: int = 16
    scratch_mb: int = 64


@dataclass
class Outcome:
    """What came back from the learner's process."""
    payload: bytes | None  # the last frame the child wrote on its result pipe
    exit_code: int | None  # None when killed by a signal
    signal: int | None
    timed_out: bool
    output: str  # first OUTPUT_CAP bytes of stdout+stderr
    output_truncated: bool
    duration_s: float
    isolation: list[str] = field(default_factory=list)


class _Libc:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL(None, use_errno=True)
        self.lib.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                                   ctypes.c_char_p]

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def unshare(self, flags: int) -> None:
        self._check(self.lib.unshare(flags), "unshare")

    def mount(self, source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
        enc = lambda s: s.encode() if s is not None else None  # noqa: E731
        self._check(self.lib.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")

    def open_tree(self, path: str) -> int:
        """A detached recursive clone of the mount tree at `path`, as a file descriptor."""
        long = ctypes.c_long
        fd = self.lib.syscall(long(SYS_OPEN_TREE), long(AT_FDCWD), path.encode(),
                              long(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE))
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"open_tree {path}: {os.strerror(err)}")
        return fd

    def move_mount(self, fd: int, target: str) -> None:
        long = ctypes.c_long
        rc = self.lib.syscall(long(SYS_MOVE_MOUNT), long(fd), b"", long(AT_FDCWD), target.encode(),
                              long(MOVE_MOUNT_F_EMPTY_PATH))
        self._check(rc, f"move_mount {target}")


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


def _outermost(paths: list[Path], under: Path) -> list[Path]:
    """The entries of `paths` below `under`, without those already inside another entry."""
    inside = sorted({p for p in paths if under in p.parents}, key=lambda p: len(p.parts))
    return [p for i, p in enumerate(inside) if not any(q in p.parents for q in inside[:i])]


def _cover(libc: _Libc, path: Path, keep: list[Path], options: str = "size=64k,mode=0755") -> None:
    """Mount an empty tmpfs over `path`, keeping the entries of `keep` below it visible.

    The kept trees are cloned as detached mounts first (open_tree), then moved onto the new tmpfs
    (move_mount): no staging folder, so this works for /tmp itself, e.g. a checkout under /tmp.
    """
    clones = [(p, libc.open_tree(str(p))) for p in _outermost(keep, path)]
    try:
        libc.mount("tmpfs", str(path), "tmpfs", MS_NOSUID | MS_NODEV, options)
        for kept, fd in clones:
            kept.mkdir(parents=True, exist_ok=True)
            libc.move_mount(fd, str(kept))
    finally:
        for _, fd in clones:
            os.close(fd)


def _confine(libc: _Libc, limits: Limits, hide: list[Path], keep: list[Path], as_root: bool,
             uid: int, notes: list[str]) -> None:
    """Runs in the grandchild (pid 1 of its namespace) before any learner code."""
    mounts_ok = True
    try:
        libc.mount(None, "/", None, MS_REC | MS_PRIVATE, None)
        owner = f",uid={uid},gid={uid}" if as_root else ""
        _cover(libc, Path("/tmp"), keep, f"size={limits.scratch_mb}m,mode=0700{owner}")
    except OSError as exc:
        mounts_ok = False
        if not in_container():  # there the container's own /tmp is the scratch space
            notes.append(f"no private scratch: {exc.strerror}")
    if mounts_ok:
        for path in sorted({p.resolve() for p in hide if p.exists()}, key=lambda p: len(p.parts)):
            try:
                _cover(libc, path, keep)
            except OSError as exc:
                notes.append(f"could not hide {path}: {exc.strerror}")
        for path in ("/dev/shm", "/var/tmp", "/run"):
            try:
                if os.path.isdir(path):
                    libc.mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
            except OSError:
                pass
    if mounts_ok:
        os.chdir("/tmp")

    address_space = _current_vm_bytes() + limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    file_bytes = limits.max_file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    cpu = int(limits.time_s) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:  # if memory runs out for the whole container, the kernel kills the learner's processes first
        Path("/proc/self/oom_score_adj").write_text("1000")
    except OSError:
        pass
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    if as_root:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes))
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    scratch = "/tmp" if mounts_ok else _private_scratch(uid, notes)
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8",
                       "OMP_NUM_THREADS": "1"})
    tempfile.tempdir = None  # the grading side may have cached its own (unwritable) temp folder


def _private_scratch(uid: int, notes: list[str]) -> str:
    """Without a private tmpfs: a fresh 0700 folder of the learner's own on the shared /tmp."""
    path = f"/tmp/learner-{uid}"
    try:
        os.mkdir(path, 0o700)
        os.chdir(path)
    except OSError as exc:
        notes.append(f"no scratch folder ({exc.strerror}): working directory is /")
        os.chdir("/")
        return "/"
    return path


def _current_vm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def in_container() -> bool:
    """True inside the grader image, where the container provides what namespaces would."""
    return os.environ.get("DLA_IN_CONTAINER") == "1"


def learner_uid(middle_pid: int) -> int:
    try:
        base = int(os.environ.get(UID_BASE_ENV, UID_BASE))
    except ValueError:
        base = UID_BASE
    return base + middle_pid


def _enter_namespaces(libc: _Libc, as_root: bool, notes: list[str]) -> bool:
    """Called in the middle process; True when the next fork lands in a new PID namespace."""
    flags = CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS
    uid, gid = os.getuid(), os.getgid()
    try:
        libc.unshare(flags if as_root else flags | CLONE_NEWUSER)
    except OSError as exc:
        if in_container():
            notes.append("graded in a single-use container: no network, read-only file system, "
                         "learner code under its own uid")
        else:
            notes.append(f"no namespaces ({exc.strerror}): network and process isolation unavailable")
        return False
    if not as_root:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        notes.append("not root: learner code runs as the grader's own user inside a user namespace")
    return True


def run_confined(target: Callable[[list[str]], bytes], limits: Limits, hide: list[Path], keep: list[Path],
                 before_drop: Callable[[], None] | None = None) -> Outcome:
    """Fork, confine, run `target` in the child and return what it produced.

    `before_drop` runs in the child before privileges are dropped and paths hidden (load the probe
    there: it may live under a hidden path). `target` returns the bytes to send back; whatever the
    learner's code writes elsewhere never reaches the verdict. `target` receives the isolation notes
    gathered so far, to pass on.
    """
    result_r, result_w = os.pipe()
    output_r, output_w = os.pipe()
    info_r, info_w = os.pipe()
    as_root = os.geteuid() == 0
    started = time.monotonic()
    middle = os.fork()
    if middle == 0:  # pragma: no cover - runs in the child
        _middle(target, limits, hide, keep, before_drop, as_root,
                (result_r, result_w, output_r, output_w, info_r, info_w))
    for fd in (result_w, output_w, info_w):
        os.close(fd)

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
    grandchild = info.get("pid")
    status, timed_out = None, False
    while True:
        pid, status = os.waitpid(middle, os.WNOHANG)
        if pid:
            break
        if time.monotonic() >= deadline:
            timed_out = True
            _kill(grandchild, middle)
            _, status = os.waitpid(middle, 0)
            break
        time.sleep(0.005)
    duration = time.monotonic() - started
    if as_root and not info.get("pidns", False):
        _kill_uid(learner_uid(middle))
    for reader in readers:
        reader.join(timeout=2)

    exit_code, sig = _decode_status(status)
    data = b"".join(result_chunks)
    return Outcome(
        payload=None if timed_out else _last_frame(data),
        exit_code=exit_code, signal=sig, timed_out=timed_out,
        output=b"".join(output_chunks).decode("utf-8", "replace"),
        output_truncated=output_trunc[0], duration_s=duration,
        isolation=info.get("notes", []),
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
    """Kill every process of the learner's uid: without a PID namespace, daemons it started would
    otherwise outlive the run. A helper takes that uid and signals everything it may signal (-1)."""
    helper = os.fork()
    if helper == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)  # never the caller itself
            code = 0
        except BaseException:
            pass
        os._exit(code)
    os.waitpid(helper, 0)


def _read_info(fd: int, deadline: float) -> dict:
    """The middle process reports the grandchild's pid and the isolation notes as one line."""
    buf = b""
    while b"\n" not in buf and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
    os.close(fd)
    try:
        return json.loads(buf.split(b"\n", 1)[0] or b"{}")
    except ValueError:
        return {}


def _middle(target, limits, hide, keep, before_drop, as_root, fds) -> None:  # pragma: no cover
    result_r, result_w, output_r, output_w, info_r, info_w = fds
    try:
        os.setsid()
        os.close(result_r)
        os.close(output_r)
        os.close(info_r)
        _close_fds_except({0, 1, 2, result_w, output_w, info_w})
        libc = _Libc()
        notes: list[str] = []
        in_pidns = _enter_namespaces(libc, as_root, notes)
        uid = learner_uid(os.getpid())
        if not in_pidns and not as_root:
            notes.append("no PID namespace: processes the learner starts are killed by process group only")
        child = os.fork()
        if child == 0:
            os.close(info_w)  # learner code must not reach the parent's status pipe
            _grandchild(target, limits, hide, keep, before_drop, as_root, uid, libc,
                        result_w, output_w, notes)
        os.write(info_w, (json.dumps({"pid": child, "notes": notes, "pidns": in_pidns}) + "\n").encode())
        os.close(info_w)
        os.close(result_w)
        os.close(output_w)
        _, status = os.waitpid(child, 0)
        if os.WIFSIGNALED(status):
            os._exit(128 + os.WTERMSIG(status))
        os._exit(os.WEXITSTATUS(status))
    except BaseException:
        os._exit(70)


def _grandchild(target, limits, hide, keep, before_drop, as_root, uid, libc, result_w, output_w,
                notes) -> None:  # pragma: no cover
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
            before_drop()
        _confine(libc, limits, hide, keep, as_root, uid, notes)
        payload = target(notes)
        _write_frame(result_w, payload)
        code = 0
    except MemoryError:
        code = 71
    except BaseException:
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code)
