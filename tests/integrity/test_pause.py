"""The pause a referee times its own original under (sandbox.jail.LearnerHandle, grader.checks.referee.timing) holds,
or the round is void and the verdict says so: it never times the original while learner code runs.

The attack (issue 48, finding 2): helper processes each inside one long system call, madvise(MADV_POPULATE_READ)
over gigabytes of zero pages (no memory of their own). SIGSTOP takes effect only when such a call returns, so
under the old container pause (SIGSTOP, then the clock at once) they shared the container's CPU quota with the
original while it was timed: the unfixed starter passed feed-the-model's `faster` 5 of 5 and fix-the-bottleneck's
not-fixed mistake 3 of 3. The local sandbox's freezer waited for FROZEN, up to 5 s, and held.
"""
from __future__ import annotations

import mmap
import os
import re
import select
import signal
import socket
import time
from pathlib import Path

import pytest

from grader.host.grading import run_submission
from sandbox.jail import Confinement, Jail, Limits
from sandbox.jail.jail import PAUSE_WAIT_S, PauseNotHeld
from tests.support.paths import EXERCISES

EXERCISE = "profiling/fix-the-bottleneck"
NOT_FIXED = (EXERCISES / EXERCISE / "mistakes" / "not-fixed.py").read_text()
MADV_POPULATE_READ = 22

# Twelve helpers, fresh small interpreters (a 2 GiB mapping fits the address space the jail allows them), each
# waiting for a byte from the learner's process, then making one MADV_POPULATE_READ over its 2 GiB: 0.1-0.25
# CPU-s a call on the machines measured, 1.4-3 CPU-s for the twelve, which a 1-CPU quota (both sandboxes) cannot
# finish within PAUSE_WAIT_S. The byte is sent before each question the grader answers by timing its original,
# and the question only once every helper is inside its call.
HELPERS_IN_LONG_CALLS = '''
import os as _os
import sys as _sys

_HELPER = r"""
import mmap, os, sys
go, started = int(sys.argv[1]), int(sys.argv[2])
zeros = mmap.mmap(-1, 2 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000, prot=mmap.PROT_READ)
os.write(started, b"r")
while os.read(go, 1):
    os.write(started, b"s")
    zeros.madvise(22)  # MADV_POPULATE_READ: one system call; a SIGSTOP waits for its end
    zeros.madvise(mmap.MADV_DONTNEED)
"""
_HELPERS = 12
_go_r, _go_w = _os.pipe()
_started_r, _started_w = _os.pipe()
for _fd in (_go_r, _started_w):
    _os.set_inheritable(_fd, True)
for _ in range(_HELPERS):
    if _os.fork() == 0:
        _os.execv(_sys.executable, [_sys.executable, "-S", "-c", _HELPER, str(_go_r), str(_started_w)])
for _ in range(_HELPERS):
    _os.read(_started_r, 1)

_learner = _sys.modules["grader.learner.channel"]._learner
_plain_ask = _learner.ask


def _ask(request):
    index = request.get("index")
    if isinstance(index, int) and (request.get("op"), index % 2) in (("start", 0), ("finish", 1)):
        _os.write(_go_w, b"g" * _HELPERS)  # the grader times its original before it answers this one
        for _ in range(_HELPERS):
            _os.read(_started_r, 1)
    return _plain_ask(request)


_learner.ask = _ask
'''


def test_helpers_inside_long_system_calls_never_time_the_original_beside_them(sandbox):
    """The attack fails either way: a round during which a helper was still inside its call is void, and the
    verdict says so; on a machine fast enough that every call ends within the pause's wait, every round was
    timed with all of them stopped, and the unfixed step is simply not faster. Which happens depends on the
    machine's speed (a void round 0 in most runs under load, round 2 in one, none on an idle machine in
    docker), so the void itself is held deterministically by the handle's tests below."""
    result = run_submission(EXERCISE, NOT_FIXED + HELPERS_IN_LONG_CALLS, sandbox=sandbox)
    assert result["status"] == "failed", result
    checks = {c["id"]: c for c in result["checks"]}
    assert checks["same-result"]["passed"], checks["same-result"]  # the step did the checked work
    faster = checks["faster"]
    assert not faster["passed"]
    message = faster["message"]
    if re.match(r"The grader could not time round \d+ with nothing but its own original running", message):
        assert f"still ran {PAUSE_WAIT_S:g} s after the grader sent them SIGSTOP" in message \
            or f"did not all stop within {PAUSE_WAIT_S:g} s" in message, message
    else:
        ratio = float(re.search(r"the original step took ([0-9.]+)x as long as yours", message).group(1))
        assert ratio < 2, message  # timed with every helper stopped: the unfixed step's own speed


# --- the handle itself, in the pytest process (no grading) ---------------------------------------------------

class CallsAndWaits:
    """Forks a child that sends its pid on the socket `ready`, then makes one MADV_POPULATE_READ over `gib` GiB of
    zero pages and exits; the job itself waits for the child, then sleeps until stopped."""

    def __init__(self, gib: int) -> None:
        self.gib = gib

    def prepare(self, fds) -> None:  # noqa: ANN001
        pass

    def run(self, fds) -> bytes:  # noqa: ANN001
        zeros = mmap.mmap(-1, self.gib << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000,
                          prot=mmap.PROT_READ)
        if os.fork() == 0:
            os.write(fds["ready"], str(os.getpid()).encode())
            zeros.madvise(MADV_POPULATE_READ)
            os._exit(0)
        os.wait()
        while True:
            time.sleep(0.05)


class Spins:
    """Says so on `ready`, then keeps a CPU busy until stopped."""

    def prepare(self, fds) -> None:  # noqa: ANN001
        pass

    def run(self, fds) -> bytes:  # noqa: ANN001
        os.write(fds["ready"], str(os.getpid()).encode())
        while True:
            pass


def paused(job, confinement: Confinement, then, view=None) -> object:  # noqa: ANN001
    """Run `job`; once the process it names has used 50 ms of CPU in the kernel (CallsAndWaits' child: inside its
    call) or in all (Spins), `then(handle)` in the jail's on_start; its return value (or the exception it
    raised) comes back here. The job is stopped right after."""
    mine, theirs = socket.socketpair()
    seen: list[object] = []

    def on_start(handle) -> None:  # noqa: ANN001
        assert select.select([mine], [], [], 20)[0], "the job never said it was ready"
        busy = Path(f"/proc/{int(mine.recv(16))}/stat")
        deadline = time.monotonic() + 20
        while cpu_ticks(busy, kernel_only=isinstance(job, CallsAndWaits)) < 5 and time.monotonic() < deadline:
            time.sleep(0.005)
        try:
            seen.append(then(handle))
        except Exception as exc:  # noqa: BLE001 - what the test asserts on
            seen.append(exc)

    with Jail(confinement, view) as jail:
        jail.run(job, Limits(time_s=30, memory_mb=40_000), sockets={"ready": theirs}, on_start=on_start,
                 stop_when=lambda: bool(seen))
    mine.close()
    return seen[0]


def cpu_ticks(stat: Path, kernel_only: bool) -> int:
    """The process's CPU time in clock ticks (10 ms): in the kernel (stime), or in all; a large number once it is
    gone (its call was over sooner)."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 1 << 30
    return int(fields[12]) if kernel_only else int(fields[11]) + int(fields[12])


def states(pid_group: int) -> list[str]:
    """The state of every thread of every process in the group."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2]) == pid_group:
                found += [(t / "stat").read_text().rsplit(")", 1)[1].split()[0] for t in (entry / "task").iterdir()]
        except (OSError, IndexError):
            continue
    return found


def test_a_pause_returns_only_once_a_task_in_a_system_call_has_stopped():
    """One short call (1 GiB, ~0.1 CPU-s): the pause waits for its end, and then every task is stopped."""
    def pause(handle):  # noqa: ANN001, ANN202
        handle.pause()
        try:
            return states(handle.pid)
        finally:
            handle.resume()

    found = paused(CallsAndWaits(gib=1), Confinement.NONE, pause)
    assert found and set(found) <= set("TZX"), found


def test_a_task_that_stays_in_a_system_call_past_the_wait_is_named_and_let_go():
    """One call over 32 GiB (~2-4 CPU-s): the pause gives up after PAUSE_WAIT_S, with the job running again."""
    def pause(handle):  # noqa: ANN001, ANN202
        started = time.monotonic()
        with pytest.raises(PauseNotHeld, match=f"1 thread of your processes still ran {PAUSE_WAIT_S:g} s") as exc:
            handle.pause()
        waited, found = time.monotonic() - started, states(handle.pid)
        os.killpg(handle.pid, signal.SIGKILL)  # the child too (unconfined: the jail leaves a job's children be)
        return exc.value, waited, found

    exc, waited, found = paused(CallsAndWaits(gib=32), Confinement.NONE, pause)
    assert "state R" in str(exc)
    assert PAUSE_WAIT_S <= waited < PAUSE_WAIT_S + 0.5, waited
    assert "T" not in found, found  # let go: nothing is left stopped


def test_cpu_used_while_the_cgroup_was_meant_to_be_frozen_voids_the_pause():
    """The accounting behind a pause that stopped everything: a job thawed behind the handle's back spins, and
    resume() says how much CPU it used (the same check reads the container's CPU beside the grading process's)."""
    from grader.harness.view import learner_view

    def thawed(handle):  # noqa: ANN001, ANN202
        handle.pause()
        handle.cgroup.thaw()
        time.sleep(0.2)
        with pytest.raises(PauseNotHeld, match=r"your processes used \d+\.\d ms of CPU while the grader had paused"):
            handle.resume()
        return True

    assert paused(Spins(), Confinement.NAMESPACES, thawed, view=learner_view(EXERCISES)) is True
