"""Run one job confined and say how it ended: the public face of the jail.

    with Jail(Confinement.NAMESPACES, view) as jail:     # forks the zygote: nothing secret exists yet
        outcome = jail.run(job, Limits(time_s=10, memory_mb=2048), sockets={"channel": learner_end},
                           on_start=serve, stop_when=refused)

The job is any picklable object with `prepare(fds)` and `run(fds) -> bytes` (tree.Job); the jail knows
nothing of what it runs. `sockets` travel to the confined process under their names (the caller keeps
the other ends); `on_start(handle)` is called once the process is confined, with a handle that pauses
and resumes all of its processes; `stop_when()` is polled and stops the job when it returns True.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import select
import shutil
import signal
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

from sandbox.jail import identity, meter
from sandbox.jail.confinement import STRATEGIES, Confinement, Limits
from sandbox.jail.tree import EXIT_CONFINEMENT, STACK_SIGNAL, Job, Spawn, decode_status, last_frame
from sandbox.jail.zygote import Zygote, ZygoteGone
from sandbox.settings import CGROUP_PARENT

if TYPE_CHECKING:
    from sandbox.jail.cgroups import CgroupRoot, SubmissionCgroup
    from sandbox.jail.view import View

T = TypeVar("T")  # what _wait_for polls for

OUTPUT_CAP = 64 * 1024  # what is kept of the confined process's stdout and stderr together
RESULT_CAP = 64 * 1024 * 1024  # of its result pipe
STACK_CAP = 16 * 1024  # of the stack the confined process writes when it is stopped at its deadline
STACK_WAIT_S = 0.5  # how long a job stopped at its deadline gets to write its stack before it is killed
# How long a pause waits for every task to stop: a task stops at its next return to user space, in
# milliseconds even when the container's CPU quota is spent; only a long system call takes longer.
PAUSE_WAIT_S = 1.0
# CPU the accounting may show over a pause without voiding it: counters tick in nanoseconds, the grading
# process's own reading of them costs microseconds (measured: see docs/sandbox.md).
PAUSE_CPU_SLACK_S = 0.005


@dataclass
class Outcome:
    """How a job ended."""
    payload: bytes | None  # the last frame the job's run() returned
    exit_code: int | None  # None when killed by a signal
    signal: int | None
    timed_out: bool
    output: str  # first OUTPUT_CAP bytes of stdout+stderr
    output_truncated: bool
    refused: str | None = None  # why the confinement could not be applied (the job did not run)
    setup_failed: str | None = None  # the job's prepare() failed, before any confinement
    out_of_memory: bool = False  # the kernel's OOM killer killed one of its processes for the cgroup's limit
    memory_limit_reached: bool = False  # its cgroup's memory use reached the limit at least once
    # Its peak memory, read where the confined code cannot write (meter.py): bytes, and which meter.
    memory_peak_bytes: int | None = None
    memory_meter: str | None = None
    # Stopped at its deadline: the Python stack of every thread of the confined process at that moment, as
    # faulthandler writes it (tree.STACK_SIGNAL). Written by the confined process itself: a hint to show
    # the learner where their code was, never evidence.
    stack: str | None = None
    # Stopped because its output passed OUTPUT_CAP (a flood gains nothing by running on).
    output_flooded: bool = False


class PauseNotHeld(Exception):
    """The learner's processes were not all stopped while the grading side timed its own work: that time is
    no measurement. The message says what was seen, in words for the learner."""


class LearnerHandle:
    """Pause and resume all of the confined processes (for a referee timing its own side).

    `pause()` returns only once every task of every confined process is stopped: NAMESPACES freezes the job's
    cgroup and waits until the kernel reports it FROZEN; a container (no cgroup of its own there: Docker mounts
    the hierarchy read-only) sends SIGSTOP to every process of the job's uid and waits until each thread of
    each one is in state T (`running_tasks`). A thread inside one long system call (madvise(MADV_POPULATE_READ)
    over gigabytes of zero pages) acts on SIGSTOP only when the call returns, and until then it runs on the
    container's CPU quota beside the grading process. After PAUSE_WAIT_S the pause gives up: PauseNotHeld.
    `resume()` then checks the CPU accounting over the paused interval (`_cpu_used`): the job's cgroup must
    have used none; a container's must have used no more than the grading process did. Anything beyond
    PAUSE_CPU_SLACK_S is PauseNotHeld (raised once the processes run again)."""

    def __init__(self, cgroup: SubmissionCgroup | None, pid: int | None, confinement: Confinement, as_root: bool,
                 uid: int, zygote: Zygote) -> None:
        self.cgroup, self.pid, self.confinement, self.as_root, self.uid = cgroup, pid, confinement, as_root, uid
        self.zygote = zygote
        self.paused_s = 0.0  # added to the job's deadline: time it was stopped is not its time
        self._since: float | None = None
        self._cpu_at_pause: tuple[float, float] | None = None

    def _by_uid(self) -> bool:
        return self.confinement is Confinement.CONTAINER and self.as_root

    def _signal(self, sig: int) -> None:
        if self._by_uid():
            self.zygote.signal_uid(self.uid, sig)  # every process of its uid, daemons included
        elif self.pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)

    def pause(self) -> None:
        """Stop every confined process; PauseNotHeld (with them running again) when they did not all stop
        within PAUSE_WAIT_S."""
        self._since = time.monotonic()  # waiting for them to stop is not their time either
        if self.cgroup is not None:
            try:
                self.cgroup.freeze(timeout=PAUSE_WAIT_S)
            except TimeoutError:
                self._continue()
                raise PauseNotHeld(f"your processes did not all stop within {PAUSE_WAIT_S:g} s of the grader "
                                   "freezing them") from None
        else:
            self._signal(signal.SIGSTOP)
            running = _wait_for(lambda: running_tasks(self._owns), PAUSE_WAIT_S)
            if running:
                self._continue()
                pid, tid, state = running[0]
                raise PauseNotHeld(f"{len(running)} thread{'s' if len(running) > 1 else ''} of your processes "
                                   f"still ran {PAUSE_WAIT_S:g} s after the grader sent them SIGSTOP, process {pid}'s "
                                   f"among them (thread {tid}, state {state}); a thread inside one long system "
                                   "call stops only when the call returns")
        self._cpu_at_pause = self._cpu_now()

    def resume(self) -> None:
        """Let them run again; PauseNotHeld when CPU was used meanwhile by anything but the grading process."""
        used = self._cpu_used()
        self._continue()
        if used is not None and used > PAUSE_CPU_SLACK_S:
            who = "your processes" if self.cgroup is not None else "processes other than the grader's"
            raise PauseNotHeld(f"{who} used {used * 1000:.1f} ms of CPU while the grader had paused your code")

    def _continue(self) -> None:
        if self._since is not None:
            self.paused_s += time.monotonic() - self._since
            self._since = None
        self._cpu_at_pause = None
        if self.cgroup is not None:
            self.cgroup.thaw()
        else:
            self._signal(signal.SIGCONT)

    def _owns(self, pid: int) -> bool:
        """Whether process `pid` is one of the job's: its uid in a container, else the confined process's group."""
        if self._by_uid():
            return _status_uid(pid) == self.uid
        return self.pid is not None and _process_group(pid) == self.pid

    def _cpu_now(self) -> tuple[float, float] | None:
        """(CPU seconds of whatever must stay still, of the grading process) now; None where unknown."""
        if self.cgroup is not None:
            used = self.cgroup.cpu_seconds()
            return None if used is None else (used, 0.0)
        if self.confinement is Confinement.CONTAINER:
            used = meter.container_cpu_seconds()
            return None if used is None else (used, time.process_time())
        return None  # NONE: one's own machine, nothing to account against

    def _cpu_used(self) -> float | None:
        """CPU seconds used since the pause held by the job's cgroup (NAMESPACES) or by the container beyond
        the grading process (CONTAINER); None where there is no accounting."""
        now, then = self._cpu_now(), self._cpu_at_pause
        if now is None or then is None:
            return None
        return (now[0] - then[0]) - (now[1] - then[1])


def running_tasks(owns: Callable[[int], bool], proc: Path = Path("/proc")) -> list[tuple[int, int, str]]:
    """(pid, thread id, state) of every thread of every process `owns` that is not stopped (T, t) or dead
    (Z, X): what can still use a CPU."""
    running = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or not owns(int(entry.name)):
            continue
        try:
            threads = list((entry / "task").iterdir())
        except OSError:
            continue  # gone
        for task in threads:
            state = _state(task / "stat")
            if state is not None and state not in "TtZX":
                running.append((int(entry.name), int(task.name), state))
    return running


def _state(stat: Path) -> str | None:
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0]  # the name before it may hold anything
    except (OSError, IndexError):
        return None


def _status_uid(pid: int) -> int | None:
    """The real uid of `pid` (/proc/PID/status: a non-dumpable process's /proc entries are root's)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next((line for line in text.splitlines() if line.startswith("Uid:")), None)
    return int(line.split()[1]) if line else None


def _process_group(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


def _wait_for(left: Callable[[], list[T]], timeout: float) -> list[T]:
    """Poll `left()` until it returns nothing or `timeout` passes; what it returned last."""
    deadline = time.monotonic() + timeout
    while True:
        found = left()
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.001)


class Jail:
    """Confinement `confinement` with file system `view` (NAMESPACES) for every job run here."""

    def __init__(self, confinement: Confinement, view: View | None = None) -> None:
        self.confinement, self.view = confinement, view
        self.strategy = STRATEGIES[confinement]
        self.zygote = Zygote()

    def __enter__(self) -> Jail:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.zygote.close()

    def run(self, job: Job, limits: Limits, *, sockets: Mapping[str, socket.socket] | None = None,
            on_start: Callable[[LearnerHandle], None] | None = None, stop_when: Callable[[], bool] | None = None,
            meter_memory: bool = False) -> Outcome:
        """Run `job` confined and return how it ended. `sockets` are closed here once handed over;
        `meter_memory`: measure its peak memory in a container too (a sampler: meter.py)."""
        from sandbox.jail import cgroups

        cgroup = None
        if self.strategy.uses_cgroup:
            try:
                cgroup = cgroups.SubmissionCgroup.create(
                    cgroup_root(), f"sub-{os.getpid()}-{next(_serial)}",
                    memory_bytes=limits.memory_mb * 1024 * 1024, pids=limits.max_processes, cpus=1.0)
            except (cgroups.CgroupUnavailable, OSError) as exc:
                for sock in (sockets or {}).values():
                    sock.close()
                return refused(f"no cgroup for the submission: {exc}")
        scratch = tempfile.mkdtemp(prefix="dla-unconfined-") if self.strategy.host_scratch else None
        try:
            outcome = self._run(job, limits, dict(sockets or {}), cgroup, on_start, stop_when, meter_memory,
                                scratch)
            if cgroup is not None:
                outcome.out_of_memory = cgroup.oom_killed()
                outcome.memory_limit_reached = cgroup.memory_limit_reached()
                outcome.memory_peak_bytes, outcome.memory_meter = cgroup.memory_peak_bytes(), "cgroup"
            return outcome
        finally:
            if cgroup is not None:
                cgroup.remove()  # kills whatever the job left running, daemons included
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)  # what the job wrote there, once it has ended

    def _run(self, job: Job, limits: Limits, sockets: dict[str, socket.socket], cgroup: SubmissionCgroup | None,
             on_start: Callable[[LearnerHandle], None] | None, stop_when: Callable[[], bool] | None,
             meter_memory: bool, scratch: str | None) -> Outcome:
        result_r, result_w = os.pipe()
        output_r, output_w = os.pipe()
        info_r, info_w = os.pipe()
        stack_r, stack_w = os.pipe()
        counter = meter.container_counter() if meter_memory and self.confinement is Confinement.CONTAINER else None
        sampler = meter.Sampler(counter) if counter is not None else None
        as_root = os.geteuid() == 0
        spawn = Spawn(job, self.confinement, limits, self.view, cgroup, tuple(sockets), scratch)
        started = time.monotonic()
        if sampler is not None:
            sampler.start()
        try:
            middle = self.zygote.spawn(spawn, [result_w, output_w, info_w, stack_w,
                                               *(s.fileno() for s in sockets.values())])
        except ZygoteGone as exc:
            for fd in (result_r, output_r, info_r, stack_r):
                os.close(fd)
            return refused(str(exc))
        finally:
            for fd in (result_w, output_w, info_w, stack_w):
                os.close(fd)
            for sock in sockets.values():
                sock.close()
        result_chunks: list[bytes] = []
        output_chunks: list[bytes] = []
        stack_chunks: list[bytes] = []
        result_trunc, output_trunc, stack_trunc = [False], [False], [False]
        readers = [threading.Thread(target=_drain, args=(result_r, RESULT_CAP, result_chunks, result_trunc)),
                   threading.Thread(target=_drain, args=(output_r, OUTPUT_CAP, output_chunks, output_trunc)),
                   threading.Thread(target=_drain, args=(stack_r, STACK_CAP, stack_chunks, stack_trunc))]
        for reader in readers:
            reader.daemon = True
            reader.start()

        deadline = started + limits.time_s
        info = _read_info(info_r, deadline + 5)
        handle = LearnerHandle(cgroup, info.get("pid"), self.confinement, as_root, identity.confined_uid(middle),
                               self.zygote)
        if on_start is not None and info.get("confined"):
            on_start(handle)
        timed_out = flooded = False
        ended = self.zygote.ended(0)
        while ended is None:
            ended = self.zygote.ended(0.005)
            if ended is not None:
                break
            flooded = output_trunc[0]  # past the output cap: the verdict is that flood, whatever comes next
            stop = flooded or (stop_when is not None and stop_when())
            if stop or time.monotonic() >= deadline + handle.paused_s:
                timed_out = not stop
                if timed_out:  # where it was: the confined process writes its stack, then dies
                    ended = _ask_for_stack(info.get("pid"), stack_chunks, self.zygote)
                if ended is None:
                    _kill(info.get("pid"), middle)
                    ended = self.zygote.ended(None)
        peak = sampler.stop() if sampler is not None else None
        for reader in readers:
            reader.join(timeout=2)
        status, maxrss_kb = ended
        exit_code, sig = decode_status(status)
        refusal, setup_failed = info.get("refused"), info.get("setup_failed")
        if refusal is None and setup_failed is None and not info.get("confined") and not timed_out \
                and exit_code == EXIT_CONFINEMENT:
            refusal = "the learner's process ended before it was confined"
        stack = b"".join(stack_chunks).decode("utf-8", "replace") if timed_out and stack_chunks else None
        return Outcome(
            payload=None if timed_out or flooded or refusal or setup_failed else last_frame(b"".join(result_chunks)),
            exit_code=exit_code, signal=sig, timed_out=timed_out,
            output=b"".join(output_chunks).decode("utf-8", "replace"), output_truncated=output_trunc[0],
            refused=refusal, setup_failed=setup_failed,
            memory_peak_bytes=peak if sampler is not None else maxrss_kb * 1024,
            memory_meter="container" if sampler is not None else "maxrss", stack=stack, output_flooded=flooded)


def refused(why: str) -> Outcome:
    return Outcome(payload=None, exit_code=None, signal=None, timed_out=False, output="",
                   output_truncated=False, refused=why)


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


def _read_info(fd: int, deadline: float) -> dict[str, Any]:
    """The middle process reports the confined process's pid, the confined process whether it is confined
    (or why not), one JSON line each; merged here."""
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
    info: dict[str, Any] = {}
    for line in buf.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            info.update(message)
    return info


def _ask_for_stack(confined: int | None, chunks: list[bytes], zygote: Zygote) -> tuple[int, int] | None:
    """At the deadline: signal the confined process to write its Python stack (tree.STACK_SIGNAL, faulthandler's
    handler: it runs even while the code is stuck in C), and give it STACK_WAIT_S to do so. The job's end when it
    ended meanwhile, else None (then it is killed)."""
    if not confined:
        return None
    try:
        os.kill(confined, STACK_SIGNAL)
    except (ProcessLookupError, PermissionError):
        return None
    until, size, changed = time.monotonic() + STACK_WAIT_S, 0, time.monotonic()
    while time.monotonic() < until:
        ended = zygote.ended(0.01)
        if ended is not None:
            return ended
        now_size = sum(map(len, chunks))
        if now_size != size:
            size, changed = now_size, time.monotonic()
        elif size and time.monotonic() - changed >= 0.05:  # written, line by line, and quiet since: done
            return None
    return None


def _kill(confined: int | None, middle: int) -> None:
    # The confined process is pid 1 of its namespace: when it dies the kernel kills everything it started.
    for pid in (confined, middle):
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass  # without CAP_KILL the job's uid is swept by the zygote after the middle dies
    try:
        os.killpg(middle, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_serial = itertools.count()
_cgroup_root: CgroupRoot | None = None


def cgroup_root() -> CgroupRoot:
    """Found once per process (inherited by the fork server's children); CgroupUnavailable says why not."""
    global _cgroup_root
    from sandbox.jail import cgroups

    if _cgroup_root is None:
        _cgroup_root = cgroups.find_root(CGROUP_PARENT.get())
        remove_stale_cgroups(_cgroup_root)
    return _cgroup_root


STALE_NAME = re.compile(r"dla-(sub-(\d+)-\d+)")


def remove_stale_cgroups(root: CgroupRoot) -> list[str]:
    """Remove the job cgroups of processes that are gone: one stopped at its deadline (or killed) never
    reached its own `remove()`. Their names carry the pid of the process that made them."""
    from sandbox.jail import cgroups

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
            pass  # the next process tries again
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # PermissionError: alive, under another uid
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
