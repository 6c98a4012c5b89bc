"""A grading-side process inside the sandbox: forked by a probe's `prepare()`, before the learner's code
is loaded, with a channel of its own to the grading process.

Some evidence can only be taken next to the learner's code: ddp-accumulate's other rank must be in the
same network namespace to join the learner's gloo group. Such a helper runs the grading side's code
only, and what it sends arrives on the helper channel (channel.take_helper), whose other end the
learner's process closes before its code runs (channel.drop_helper), so its report is grading-side
evidence. It shares the learner's uid, but the learner's process and everything it forks are
non-dumpable (sandbox/jail/confinement.py) and the seccomp filter denies ptrace, process_vm_* and pidfd_getfd: the
learner's code cannot read or write its memory, nor take its channel. It can kill or stop it; then no
report arrives, and a check that needs one fails.
"""
from __future__ import annotations

import os
import signal
import time
from typing import Callable

from grader.learner import channel


def start(run: Callable[[channel.LearnerChannel], None]) -> int:
    """Fork a helper that runs `run(its channel)` and exits; returns its pid. Call from `prepare()`."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the helper
        code = 70
        try:
            run(channel.take_helper())
            code = 0
        except BaseException:  # noqa: BLE001 - a forked process must reach os._exit; its missing report says why
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def wait(pid: int, seconds: float) -> bool:
    """Wait up to `seconds` for the helper to exit (killed after that); True when it exited on its own."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            return True  # already reaped
        time.sleep(0.01)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
    return False
