"""The zygote: a fork of the calling process, made before that process holds anything the confined code
must not read, from which every confined process tree is forked.

A forked child is a copy of its parent's memory. A process that grades forks its confined children
after it has drawn secrets (a referee's data, which process is measured), and a child can read its own
copy of them: `gc.get_objects()` finds them. So the jail forks once, early (`Jail(...)` before anything
secret exists), and asks that copy for every later fork. The zygote runs only this module's loop: it
forks a middle process per job (tree.py), reports its pid, waits for it, reports how it ended, and
signals a uid's processes when asked (a container's pause, resume and final sweep). It dies with the
process that made it.

Its two sockets: `control` (jobs, one at a time: the spawn message with its descriptors, then the middle's
pid, then its end) and `signals` (pause and resume while a job runs, from other threads).
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import struct
import sys
import threading
import traceback
from typing import Any, Sequence

from sandbox.jail import identity
from sandbox.jail.libc import Libc
from sandbox.jail.tree import Spawn, close_fds_except, middle

_LENGTH = struct.Struct(">I")
MAX_FDS = 8


class ZygoteGone(OSError):
    """The zygote does not answer: no confined process can be started."""


def _send(sock: socket.socket, message: Any, fds: Sequence[int] = ()) -> None:
    payload = pickle.dumps(message)
    header = _LENGTH.pack(len(payload))
    if fds:
        socket.send_fds(sock, [header], list(fds))
        sock.sendall(payload)
    else:
        sock.sendall(header + payload)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> tuple[Any, list[int]] | None:
    """A message and the descriptors that came with it; None at the end of the stream."""
    try:
        header, fds, _flags, _addr = socket.recv_fds(sock, _LENGTH.size, MAX_FDS)
        if not header:
            return None
        if len(header) < _LENGTH.size:
            header += _recv_exactly(sock, _LENGTH.size - len(header))
        (size,) = _LENGTH.unpack(header)
        return pickle.loads(_recv_exactly(sock, size)), fds  # both ends are the same program
    except EOFError:
        return None


class Zygote:
    def __init__(self) -> None:
        self._control, control = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._signals, signals = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._lock = threading.Lock()
        parent = os.getpid()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the zygote
            code = 70
            try:
                self._control.close()
                self._signals.close()
                _serve(control, signals, parent)
                code = 0
            except BaseException:  # noqa: BLE001 - a forked process must reach os._exit whatever happens
                traceback.print_exc()
            finally:
                os._exit(code)
        control.close()
        signals.close()
        self.pid = pid

    def spawn(self, spawn: Spawn, fds: list[int]) -> int:
        """Start one job's middle process; returns its pid."""
        try:
            _send(self._control, spawn, fds)
            reply = _recv(self._control)
        except OSError as exc:
            raise ZygoteGone(f"the jail's zygote is gone: {exc}") from None
        if reply is None or "pid" not in reply[0]:
            raise ZygoteGone(f"the jail's zygote did not start the job: {reply[0] if reply else 'it exited'}")
        pid: int = reply[0]["pid"]
        return pid

    def ended(self, timeout: float | None) -> tuple[int, int] | None:
        """(wait status, peak resident kilobytes) once the job's middle process has ended; None if it has not
        within `timeout` seconds (None: wait for it)."""
        if not select.select([self._control], [], [], timeout)[0]:
            return None
        reply = _recv(self._control)
        if reply is None:
            raise ZygoteGone("the jail's zygote exited while a job ran")
        return reply[0]["status"], reply[0]["maxrss"]

    def signal_uid(self, uid: int, sig: int) -> None:
        """Signal every process of `uid` (a helper forked by the zygote takes that uid)."""
        with self._lock:
            try:
                _send(self._signals, {"uid": uid, "signal": int(sig)})
                _recv(self._signals)
            except OSError:
                pass

    def close(self) -> None:
        for sock in (self._control, self._signals):
            sock.close()
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _serve(control: socket.socket, signals: socket.socket, parent: int) -> None:  # pragma: no cover - zygote
    Libc().die_with_parent(parent)
    close_fds_except({0, 1, 2, control.fileno(), signals.fileno()})
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        ready = select.select([control, signals], [], [])[0]
        if signals in ready and not _answer_signal(signals):
            return
        if control not in ready:
            continue
        message = _recv(control)
        if message is None:
            return
        spawn, fds = message
        pid = os.fork()
        if pid == 0:
            control.close()
            signals.close()
            middle(spawn, fds, os.getppid())
        for fd in fds:
            os.close(fd)
        _send(control, {"pid": pid})
        pidfd = os.pidfd_open(pid)
        try:
            while True:
                watched: list[int | socket.socket] = [pidfd, signals, control]
                woke = select.select(watched, [], [])[0]
                if signals in woke and not _answer_signal(signals):
                    return
                if control in woke and not control.recv(1, socket.MSG_PEEK):
                    os.kill(pid, signal.SIGKILL)  # the job's owner is gone: so is the job
                    os.waitpid(pid, 0)
                    return
                if pidfd in woke:
                    _, status, usage = os.wait4(pid, 0)
                    break
        finally:
            os.close(pidfd)
        if spawn.confinement.value == "container" and os.geteuid() == 0:
            # No PID namespace there: processes the job left behind would outlive it.
            identity.signal_uid(identity.confined_uid(pid), signal.SIGKILL)
        _send(control, {"status": status, "maxrss": usage.ru_maxrss})


def _answer_signal(signals: socket.socket) -> bool:
    request = _recv(signals)
    if request is None:
        return False
    identity.signal_uid(request[0]["uid"], request[0]["signal"])
    _send(signals, {"done": True})
    return True
