"""The local sandbox: the entry as a process of this machine.

The entry confines its work itself (the jail: sandbox/jail/); this module starts it with an empty
environment and the contract's deadlines. Cold, each request gets a fresh process (what `grader check`
does); warm, a fork server that has imported what it needs once forks a fresh process per request
(sandbox/forkserver.py), and a `WarmPool` keeps a few of those forked and ready (what the web app and
the queue worker do).
"""
from __future__ import annotations

import functools
import json
import os
import select
import signal
import socket
import subprocess
import threading
import uuid
from typing import Callable

from sandbox import Entry, Reply, SandboxError, Work
from sandbox.pool import WarmPool
from sandbox.process import EntryProcess, PopenProcess
from sandbox.settings import CGROUP_PARENT, STARTUP_TIMEOUT_S

ADVICE = ("Run the grader as root; or, as another user, enable unprivileged user namespaces and delegate "
          "a cgroup subtree (DLA_CGROUP_PARENT, see docs/sandbox.md); or use the docker sandbox "
          "(sandbox/ensure-engine && sandbox/build-images).")


def environment(entry: Entry) -> dict[str, str]:
    """The entry inherits nothing of ours but a PATH and the operator's delegated cgroup (no secrets, no
    DATABASE_URL), plus what the entry itself asks for."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
           "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", **dict(entry.env)}
    if CGROUP_PARENT.is_set():
        env[CGROUP_PARENT.env] = CGROUP_PARENT.get()
    return env


@functools.cache
def confinement_problems(entry: Entry) -> tuple[str, ...]:
    """What keeps this host from confining the entry's work (`ENTRY --preflight`); () when nothing."""
    try:
        proc = subprocess.run(entry.with_args("--preflight"), capture_output=True, env=environment(entry),
                              timeout=STARTUP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return (f"the confinement check did not answer within {STARTUP_TIMEOUT_S:g} s",)
    try:
        return tuple(json.loads(proc.stdout)["problems"])
    except (ValueError, KeyError, TypeError):
        return (f"the confinement check itself failed (exit {proc.returncode}): "
                f"{proc.stderr.decode(errors='replace')[-500:]}",)


class ForkedProcess(EntryProcess):
    """A fork-server child: not our child, so it is watched and signalled through a pidfd."""

    def __init__(self, pid: int, stdin: int, stdout: int, stderr: int,
                 on_change: Callable[[EntryProcess], None] | None):
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:  # already gone: its output ends at once and says so
            self._pidfd = None
        super().__init__(f"fork-{pid}", os.fdopen(stdin, "wb"), os.fdopen(stdout, "rb"), os.fdopen(stderr, "rb"),
                         on_change)

    def kill(self) -> None:
        if self._pidfd is not None:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except (ProcessLookupError, OSError):
                pass

    def wait(self, timeout: float) -> int | None:
        if self._pidfd is None:
            return None
        if not select.select([self._pidfd], [], [], timeout)[0]:
            self.kill()
            select.select([self._pidfd], [], [], 10)
        os.close(self._pidfd)
        self._pidfd = None
        return None  # the fork server's to reap; its exit code is not ours to read


class ForkServer:
    """A warm `ENTRY --fork-server FD` and the socket that asks it for children."""

    def __init__(self, entry: Entry, env: dict[str, str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = entry.with_args("--fork-server", str(theirs.fileno()))
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        env=env, pass_fds=[theirs.fileno()], start_new_session=True)
        theirs.close()
        self._socket = ours
        self._lock = threading.Lock()
        ours.settimeout(STARTUP_TIMEOUT_S)
        try:
            hello = json.loads(ours.recv(256) or b"{}")
        except (OSError, ValueError) as exc:
            self.close()
            raise SandboxError(f"the local fork server did not start: {exc}") from None
        if not hello.get("ready"):
            self.close()
            raise SandboxError(f"the local fork server did not start (exit {self.process.poll()})")
        ours.settimeout(10)

    def spawn(self, on_change: Callable[[EntryProcess], None] | None = None) -> EntryProcess:
        """A fresh process, forked from the warm server, ready at once."""
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        try:
            with self._lock:
                socket.send_fds(self._socket, [b"spawn"], [stdin_r, stdout_w, stderr_w])
                reply = json.loads(self._socket.recv(256) or b"{}")
        except (OSError, ValueError) as exc:
            for fd in (stdin_w, stdout_r, stderr_r):
                os.close(fd)
            raise SandboxError(f"the local fork server is gone: {exc}") from None
        finally:
            for fd in (stdin_r, stdout_w, stderr_w):
                os.close(fd)
        if "pid" not in reply:
            for fd in (stdin_w, stdout_r, stderr_r):
                os.close(fd)
            raise SandboxError(f"the local fork server refused: {reply.get('error')}")
        return ForkedProcess(reply["pid"], stdin_w, stdout_r, stderr_r, on_change)

    def close(self) -> None:
        self._socket.close()  # the server reads end-of-input and exits
        try:
            self.process.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.process.kill()
            self.process.wait()


def warm_pool(entry: Entry, size: int) -> WarmPool:
    """A pool of fork-server children of `entry`; closing it stops the server."""
    server = ForkServer(entry, environment(entry))
    return WarmPool(server.spawn, size, serves=entry, on_close=server.close)


class LocalSandbox:
    """Work confined by namespaces, an allowlist view, a cgroup and seccomp, or not run at all:
    `available()` says what this host lacks, and a service refuses such a host. `entry`: what it checks
    the host with (and what its pool, if any, serves)."""
    name = "local"

    def __init__(self, entry: Entry, pool: WarmPool | None = None, also_unavailable: str = ""):
        """`also_unavailable`: why the docker sandbox was not chosen instead (for the refusal message)."""
        self.entry = entry
        self.pool = pool
        self.also_unavailable = also_unavailable

    def available(self) -> tuple[bool, str]:
        problems = confinement_problems(self.entry)
        if problems:
            return False, f"it cannot confine learner code here: {'; '.join(problems)}. {ADVICE}"
        return True, ""

    def require(self) -> None:
        """SandboxError unless this host confines (checked once per process; see available())."""
        ok, why = self.available()
        if not ok:
            raise SandboxError(f"the {self.name} sandbox is refused: {why}{self.also_unavailable}")

    def start(self, entry: Entry) -> EntryProcess:
        """A cold process of `entry` (a fresh interpreter)."""
        return PopenProcess(f"{self.name}-{uuid.uuid4().hex[:8]}", list(entry.command), environment(entry))

    def run(self, work: Work) -> Reply:
        process = None
        if self.pool is not None and work.entry == self.pool.serves:
            process = self.pool.take()
        if process is None:
            process = self.start(work.entry)
        try:
            # A cold process imports torch for seconds: the host check (once per process) runs meanwhile.
            try:
                self.require()
            except SandboxError:
                process.kill()
                raise
            return process.answer(work)
        finally:
            if self.pool is not None and self.pool.owns(process):
                self.pool.discard(process)
            else:
                process.close()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


class UnconfinedSandbox(LocalSandbox):
    """`grader check --sandbox unconfined`: one's own code on one's own machine, which already holds the
    solutions, where the local sandbox cannot confine. Rlimits only; every result says so. Never chosen
    automatically, never used by the web app or the worker."""
    name = "unconfined"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def require(self) -> None:
        pass
