"""A warm pool of started, single-use grading processes, for any sandbox.

An entry process (a grading process) spends seconds importing torch before it can grade; grading itself
takes tens of milliseconds. The pool keeps `size` processes started and warm, each waiting for exactly one request.
`take` hands one out and at once starts its replacement; a process is never given a second request.
Under a burst (more takers waiting than processes starting) it starts more, up to `max_size`
(default: the CPU count, since each grading keeps one CPU busy); processes beyond `size` that stay
idle for `idle_s` are stopped.

The pool does not know what it starts: the sandbox that owns it passes `start(on_change)`, which
returns a `EntryProcess` (a container for docker, a fork-server child for local):

    pool = WarmPool(start, size=2)
    sandbox = LocalSandbox(pool=pool)       # the sandbox draws from the pool it was given
    ...
    pool.close()                            # or `with WarmPool(...) as pool: ...`
"""
from __future__ import annotations

import atexit
import os
import threading
import time
from typing import Callable

from sandbox import SandboxError
from sandbox.process import EntryProcess
from sandbox.settings import STARTUP_TIMEOUT_S

MAX_START_FAILURES = 3  # in a row: then the image, engine or fork server is broken and the pool says so

Starter = Callable[[Callable[[EntryProcess], None]], EntryProcess]


class WarmPool:
    def __init__(self, start: Starter, size: int = 2, *, serves: object = None, max_size: int | None = None,
                 idle_s: float = 60.0, on_close: Callable[[], None] | None = None):
        """`serves`: what its processes can grade (the local exercises folder, a container spec); the
        sandbox that owns the pool decides what fits. `on_close` runs after the last process is gone."""
        if size < 1:
            raise ValueError("a warm pool needs at least one process")
        self.size = size
        self.serves = serves
        self.max_size = max(size, max_size if max_size is not None else (os.cpu_count() or 1))
        self.idle_s = idle_s
        self._start = start
        self._on_close = on_close
        self._cond = threading.Condition()
        self._idle: list[EntryProcess] = []
        self._busy: set[EntryProcess] = set()
        self._cleanups: list[threading.Thread] = []
        self._takers = 0  # callers waiting in take()
        self._failures = 0
        self._broken: str | None = None
        self._closed = False
        self.started_total = 0
        self.takes_waited = 0  # takes that found no warm process and waited for one to start
        with self._cond:
            self._refill()
        self._trimmer = threading.Thread(target=self._trim_idle, daemon=True)
        self._trimmer.start()
        atexit.register(self.close)

    # -- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the waiting processes and wait until every process of this pool is gone."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        closers = [threading.Thread(target=_stop, args=(p,)) for p in idle]
        for thread in closers:
            thread.start()
        for thread in closers:
            thread.join()
        for thread in list(self._cleanups):
            thread.join()
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_warm(self, count: int | None = None, timeout: float = STARTUP_TIMEOUT_S) -> bool:
        """Block until `count` (default: `size`) waiting processes are warm; False if they never are.
        Benchmarks and tests use it to time a submission from hand-over, not from a refill."""
        want = self.size if count is None else min(count, self.size)
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._ready()) < want:
                if self._broken or self._closed:
                    return False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def waiting(self) -> list[str]:
        """Names of the processes waiting for a request (all others must be gone)."""
        with self._cond:
            return [p.name for p in self._idle]

    def members(self) -> list[str]:
        """Names of every process this pool holds: waiting, handed out, or still being cleaned up."""
        with self._cond:
            return [p.name for p in [*self._idle, *self._busy]] + [t.name for t in self._cleanups]

    # -- handing out -------------------------------------------------------------------------------
    def take(self, timeout: float = STARTUP_TIMEOUT_S) -> EntryProcess | None:
        """A warm process for one request, or None when the caller should start a cold one."""
        deadline = time.monotonic() + timeout
        waited = False
        with self._cond:
            self._takers += 1
            try:
                while True:
                    if self._closed:
                        return None
                    if self._broken:
                        raise SandboxError(f"the warm pool cannot start grading processes: {self._broken}")
                    ready = self._ready()
                    if ready:
                        process = min(ready, key=lambda p: p.started)
                        self._idle.remove(process)
                        self._busy.add(process)
                        self._refill()
                        return process
                    if not waited:
                        waited = True
                        self.takes_waited += 1
                    # A burst: more takers than processes on their way, so start more (up to max_size).
                    if self._takers > len(self._idle) and self._total() < self.max_size:
                        self._spawn()
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    self._cond.wait(remaining)
            finally:
                self._takers -= 1

    def owns(self, process: EntryProcess) -> bool:
        with self._cond:
            return process in self._busy

    def discard(self, process: EntryProcess) -> None:
        """The process graded its one request: let it exit and be reaped, and its replacement start, in the
        background. Not here: starting one (a fork of the fork server, ~10 ms) would delay the verdict."""
        with self._cond:
            self._busy.discard(process)
            thread = threading.Thread(target=self._finish, args=(process, True), daemon=True, name=process.name)
            self._cleanups.append(thread)
        thread.start()

    # -- internals ---------------------------------------------------------------------------------
    def _ready(self) -> list[EntryProcess]:
        return [p for p in self._idle if p.ready_at is not None and not p.ended]

    def _finish(self, process: EntryProcess, refill: bool = False) -> None:
        if refill:
            with self._cond:
                self._refill()
        process.close()
        with self._cond:
            self._cleanups.remove(threading.current_thread())

    def _total(self) -> int:
        return len(self._idle) + len(self._busy)

    def _refill(self) -> None:
        """Keep `size` processes waiting, within max_size in all (called with the lock held)."""
        while len(self._idle) < self.size and self._total() < self.max_size and not self._broken:
            before = len(self._idle)
            self._spawn()
            if len(self._idle) == before:
                break

    def _spawn(self) -> None:
        """Start one more waiting process (called with the lock held)."""
        while not (self._closed or self._broken):
            try:
                self._idle.append(self._start(self._changed))
            except SandboxError as exc:  # a start that fails at once is retried at once, a few times
                self._failed(str(exc))
                continue
            self.started_total += 1
            return

    def _failed(self, why: str) -> None:
        self._failures += 1
        if self._failures >= MAX_START_FAILURES:
            self._broken = f"{self._failures} in a row failed to start: {why}"
            self._cond.notify_all()

    def _changed(self, process: EntryProcess) -> None:
        with self._cond:
            if process.ready_at is not None and not process.ended:
                self._failures = 0
            elif process in self._idle:  # died while waiting (or never got ready)
                self._idle.remove(process)
                self._failed(process.stderr_tail(500))
                self._refill()
                thread = threading.Thread(target=self._finish, args=(process,), daemon=True, name=process.name)
                self._cleanups.append(thread)
                thread.start()
            self._cond.notify_all()

    def _trim_idle(self) -> None:
        """Stop processes beyond `size` that have waited `idle_s` without a request."""
        with self._cond:
            while not self._closed:
                self._cond.wait(self.idle_s / 2)
                now = time.monotonic()
                stale = [p for p in self._ready() if now - (p.ready_at or now) > self.idle_s]
                for process in stale[:max(0, len(self._idle) - self.size)]:
                    self._idle.remove(process)
                    thread = threading.Thread(target=self._finish, args=(process,), daemon=True,
                                              name=process.name)
                    self._cleanups.append(thread)
                    thread.start()


def _stop(process: EntryProcess) -> None:
    """Stop a process that never got a request (it may still be importing torch)."""
    process.kill()
    process.close()
