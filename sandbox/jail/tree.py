"""The two processes of a confined job, as they run after the zygote forks them.

    zygote ─ middle      setsid, its strategy's middle steps (cgroup, namespaces), dies with the zygote,
               │         forks the confined process, reports its pid, waits, exits with its status
               └ child   stdio to the output pipe, the job's prepare(), its strategy's child steps in
                         order, then the job's run() and the payload it returns, as one frame

What the parent learns before the job's code runs (the child's pid, a refusal, a failed prepare) comes
over the info pipe, which the child closes before `run()`: it can be trusted. Whatever the job writes
elsewhere never reaches the parent but as output.
"""
from __future__ import annotations

import faulthandler
import json
import os
import signal
import struct
import sys
import tempfile
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Protocol

from sandbox.jail import identity
from sandbox.jail.confinement import (
    STRATEGIES,
    Child,
    Confinement,
    Limits,
    Middle,
    MiddleStep,
    join_cgroup,
    new_namespaces,
)
from sandbox.jail.libc import Libc

if TYPE_CHECKING:
    from sandbox.jail.cgroups import SubmissionCgroup
    from sandbox.jail.view import View

EXIT_FAILED, EXIT_OUT_OF_MEMORY, EXIT_CONFINEMENT = 70, 71, 72
# Sent to the confined process at its deadline: faulthandler's handler writes every thread's Python stack to
# the stack pipe (jail.Outcome.stack), so a timeout can say where the code was.
STACK_SIGNAL = signal.SIGUSR2
CONFINED_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}
# How a middle step's failure reads (the child's steps say their exception).
MIDDLE_STEP_WHAT: dict[MiddleStep, str] = {join_cgroup: "no cgroup", new_namespaces: "no namespaces"}


class Job(Protocol):
    """What runs confined. It travels to the zygote pickled, so it is data plus these two methods; `fds`
    maps the names of the sockets the caller passed (Jail.run) to their descriptors in this process."""

    def prepare(self, fds: Mapping[str, int]) -> None:
        """Before any confinement step (e.g. load files the confined view will not hold). An exception is
        reported as the job's own failure (Outcome.setup_failed), not as the confined code's."""

    def run(self, fds: Mapping[str, int]) -> bytes:
        """Confined: the bytes to send back (the result frame)."""


@dataclass(frozen=True)
class Spawn:
    """One job for the zygote: what to run, how to confine it, and the names of the sockets after the four
    pipes (result, output, info, stack) among the descriptors sent with it."""
    job: Job
    confinement: Confinement
    limits: Limits
    view: View | None
    cgroup: SubmissionCgroup | None
    names: tuple[str, ...]
    scratch: str | None = None  # the folder the jail made for it (Strategy.host_scratch)


def say(fd: int, message: dict[str, object]) -> None:
    os.write(fd, (json.dumps(message) + "\n").encode())


def write_frame(fd: int, payload: bytes) -> None:
    data = struct.pack(">Q", len(payload)) + payload
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def last_frame(data: bytes) -> bytes | None:
    """The last complete length-prefixed frame in `data`."""
    last, pos = None, 0
    while pos + 8 <= len(data):
        (size,) = struct.unpack(">Q", data[pos:pos + 8])
        if pos + 8 + size > len(data):
            break
        last = data[pos + 8:pos + 8 + size]
        pos += 8 + size
    return last


def close_fds_except(keep: set[int]) -> None:
    """The confined code must inherit no descriptor of ours: verdict pipes, sockets, database files."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def decode_status(status: int) -> tuple[int | None, int | None]:
    """(exit code, signal): the middle process exits 128+N when the confined process died of signal N."""
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    code = os.WEXITSTATUS(status)
    if code > 128:
        return None, code - 128
    return code, None


def middle(spawn: Spawn, fds: list[int], zygote: int) -> None:  # pragma: no cover - runs in the child
    result_w, output_w, info_w, stack_w, *named = fds
    try:
        os.setsid()
        close_fds_except({0, 1, 2, *fds})
        libc, as_root = Libc(), os.geteuid() == 0
        strategy = STRATEGIES[spawn.confinement]
        state = Middle(as_root, spawn.cgroup, libc)
        for step in strategy.middle:
            try:
                step(state)
            except OSError as exc:
                say(info_w, {"refused": f"{MIDDLE_STEP_WHAT.get(step, step.__name__)}: {exc.strerror or exc}"})
                os._exit(EXIT_CONFINEMENT)
        libc.die_with_parent(zygote)
        uid = identity.confined_uid(os.getpid())
        child = os.fork()
        if child == 0:
            _child(spawn, uid, libc, as_root, result_w, output_w, info_w, stack_w, dict(zip(spawn.names, named)))
        say(info_w, {"pid": child})
        for fd in fds:
            os.close(fd)
        _, status = os.waitpid(child, 0)
        if os.WIFSIGNALED(status):
            os._exit(128 + os.WTERMSIG(status))
        os._exit(os.WEXITSTATUS(status))
    except BaseException:  # noqa: BLE001 - a forked process must reach os._exit whatever happens
        os._exit(EXIT_FAILED)


def _child(spawn: Spawn, uid: int, libc: Libc, as_root: bool, result_w: int, output_w: int, info_w: int,
           stack_w: int, named: dict[str, int]) -> None:  # pragma: no cover - runs in the child
    code = EXIT_FAILED
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
        try:
            spawn.job.prepare(named)
        except Exception:  # noqa: BLE001 - reported as the job's own failure, not the confined code's
            say(info_w, {"setup_failed": traceback.format_exc(limit=-3)})
            os._exit(EXIT_CONFINEMENT)
        state = Child(spawn.limits, spawn.view, as_root, uid, parent=os.getppid(), libc=libc,
                      scratch=spawn.scratch or "/tmp")
        try:
            for step in STRATEGIES[spawn.confinement].child:
                step(state)
        except Exception as exc:  # noqa: BLE001 - the code must not run half-confined
            say(info_w, {"refused": f"{type(exc).__name__}: {exc}"})
            os._exit(EXIT_CONFINEMENT)
        say(info_w, {"confined": True})
        os.close(info_w)  # the confined code must not reach the parent's status pipe
        faulthandler.register(STACK_SIGNAL, file=stack_w, all_threads=True)  # where it is, at its deadline
        os.environ.clear()
        os.environ.update({**CONFINED_ENV, "HOME": state.scratch, "TMPDIR": state.scratch})
        tempfile.tempdir = None  # the parent may have cached its own (unreachable) temp folder
        payload = spawn.job.run(named)
        write_frame(result_w, payload)
        code = 0
    except MemoryError:
        code = EXIT_OUT_OF_MEMORY
    except BaseException:  # noqa: BLE001 - a forked process must reach os._exit whatever happens
        code = EXIT_FAILED
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - a forked process must reach os._exit whatever happens
            pass
        os._exit(code)
