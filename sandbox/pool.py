"""A warm pool of pre-started, single-use grading containers.

A cold container spends ~2 s importing torch before it can grade; grading itself takes tens of
milliseconds. The pool keeps `size` containers started and warmed, each waiting for exactly one
submission on stdin. `take` hands one out and at once starts its replacement; a container is never
given a second submission. A long-running process (the web app's queue worker) starts one pool:

    from sandbox.pool import WarmPool
    pool = WarmPool(size=2).start()   # from now on the docker sandbox of this process uses it
    ...
    pool.close()                      # or `with WarmPool(2).start(): ...`

Submissions whose container would differ (more memory than the pool's, another image, a GPU) get a
cold container; so does a submission that finds no warm container within STARTUP_TIMEOUT_S.
"""
from __future__ import annotations

import atexit
import contextlib
import threading
import time
from typing import Iterator

from sandbox import SandboxError
from sandbox.docker import (GRADER_MEMORY_MB, STARTUP_TIMEOUT_S, Container, ContainerSpec, DockerSandbox,
                            image_ready)

MAX_START_FAILURES = 3  # in a row: then the image or engine is broken and the pool says so

_active: WarmPool | None = None
_active_lock = threading.Lock()


def active() -> WarmPool | None:
    """The pool this process started, if any: the docker sandbox draws its containers from it."""
    return _active


@contextlib.contextmanager
def bypassed() -> Iterator[None]:
    """Grade in cold containers for a while, the pool staying warm: benchmarks compare the two."""
    global _active
    with _active_lock:
        saved, _active = _active, None
    try:
        yield
    finally:
        with _active_lock:
            _active = saved


def default_spec() -> ContainerSpec:
    """Large enough for every exercise of the course: the learner's own limit is set per exercise."""
    from grader.course import load_course

    exercises = list(load_course().exercises.values())
    sandbox = DockerSandbox()
    specs = [sandbox.spec_for(exercise) for exercise in exercises]
    gpus = any(spec.gpus for spec in specs)
    image = next((spec.image for spec in specs if spec.gpus == gpus), sandbox.image)
    memory = max((exercise.memory_mb for exercise in exercises), default=2048) + GRADER_MEMORY_MB
    return ContainerSpec(image=image, memory_mb=memory, gpus=gpus)


def _stop(container: Container) -> None:
    """Remove a container that never got a submission (it may still be importing torch)."""
    container.kill()
    container.close()


class WarmPool:
    def __init__(self, size: int = 2, spec: ContainerSpec | None = None):
        if size < 1:
            raise ValueError("a warm pool needs at least one container")
        self.size = size
        self.spec = spec or default_spec()
        self._cond = threading.Condition()
        self._idle: list[Container] = []
        self._busy: set[Container] = set()
        self._cleanups: list[threading.Thread] = []
        self._failures = 0
        self._broken: str | None = None
        self._closed = True
        self.started_total = 0

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> WarmPool:
        global _active
        ok, why = image_ready(self.spec.image)
        if not ok:
            raise SandboxError(f"cannot start a warm pool: {why}")
        with _active_lock:
            if _active is not None:
                raise SandboxError("a warm pool is already running in this process")
            _active = self
        with self._cond:
            self._closed = False
            for _ in range(self.size):
                self._spawn()
        atexit.register(self.close)
        return self

    def close(self) -> None:
        """Stop the waiting containers and wait until every container of this pool is gone."""
        global _active
        with _active_lock:
            if _active is self:
                _active = None
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        closers = [threading.Thread(target=_stop, args=(c,)) for c in idle]
        for thread in closers:
            thread.start()
        for thread in closers:
            thread.join()
        for thread in list(self._cleanups):
            thread.join()

    def __enter__(self) -> WarmPool:
        return self if not self._closed else self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_warm(self, count: int | None = None, timeout: float = STARTUP_TIMEOUT_S) -> bool:
        """Block until `count` (default: all) waiting containers are warm; False if they never are.
        Benchmarks and tests use it to time a submission from hand-over, not from a refill."""
        want = self.size if count is None else min(count, self.size)
        deadline = time.monotonic() + timeout
        with self._cond:
            while sum(c.ready_at is not None and not c.ended for c in self._idle) < want:
                if self._broken or self._closed:
                    return False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def waiting(self) -> list[str]:
        """Names of the containers waiting for a submission (all others must be gone)."""
        with self._cond:
            return [c.name for c in self._idle]

    # -- handing out -------------------------------------------------------------------------------
    def fits(self, spec: ContainerSpec) -> bool:
        return spec.image == self.spec.image and spec.gpus == self.spec.gpus \
            and spec.memory_mb <= self.spec.memory_mb

    def take(self, spec: ContainerSpec, timeout: float = STARTUP_TIMEOUT_S) -> Container | None:
        """A warm container for one submission, or None when the caller should start a cold one."""
        if not self.fits(spec):
            return None
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    return None
                if self._broken:
                    raise SandboxError(f"the warm pool cannot start containers: {self._broken}")
                ready = [c for c in self._idle if c.ready_at is not None and not c.ended]
                if ready:
                    container = min(ready, key=lambda c: c.started)
                    self._idle.remove(container)
                    self._busy.add(container)
                    self._spawn()
                    return container
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def owns(self, container: Container) -> bool:
        with self._cond:
            return container in self._busy

    def discard(self, container: Container) -> None:
        """The container graded its one submission: let it exit and be removed in the background."""
        with self._cond:
            self._busy.discard(container)
            thread = threading.Thread(target=self._finish, args=(container,), daemon=True)
            self._cleanups.append(thread)
        thread.start()

    # -- internals ---------------------------------------------------------------------------------
    def _finish(self, container: Container) -> None:
        container.close()
        with self._cond:
            self._cleanups.remove(threading.current_thread())

    def _spawn(self) -> None:
        """Start one more waiting container (called with the lock held)."""
        if self._closed or self._broken:
            return
        self._idle.append(Container(self.spec, on_change=self._changed))
        self.started_total += 1

    def _changed(self, container: Container) -> None:
        with self._cond:
            if container.ready_at is not None and not container.ended:
                self._failures = 0
            elif container in self._idle:  # died while waiting (or never got ready)
                self._idle.remove(container)
                self._failures += 1
                if self._failures >= MAX_START_FAILURES:
                    self._broken = f"{self._failures} containers in a row died: {container.stderr_tail(500)}"
                else:
                    self._spawn()
                thread = threading.Thread(target=self._finish, args=(container,), daemon=True)
                self._cleanups.append(thread)
                thread.start()
            self._cond.notify_all()
