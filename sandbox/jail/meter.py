"""Meters the confined processes cannot write: read by the process that started them.

Memory:

    cgroup      NAMESPACES: the confined processes' own cgroup's peak (cgroups.SubmissionCgroup), every
                page they charged, kernel memory such as socket and pipe buffers included.
    container   CONTAINER: the container's cgroup as the container sees it (read-only), sampled every
                millisecond while the job runs, its highest value less its value before the job started.
                It counts every process of the container and the kernel memory charged to it (socket
                buffers, tmpfs files): a child never waited for, or buffers used as a hiding place, are
                in it. The process that reads it is in that container too, so its own allocations while
                the job runs count as the job's (it makes few); a peak narrower than a millisecond can
                be missed.
    maxrss      otherwise (no cgroup is readable): wait4's peak resident set of the middle process and
                the children it waited for, the largest single process's, shared pages included.

CPU (`container_cpu_seconds`): the container's own CPU accounting as the container sees it (read-only): every
process of the container, the grading process included. A referee's pause (jail.LearnerHandle) reads it
with the grading process's own CPU time (`time.process_time`, every thread of it) at both ends of the
interval it times its own work in: what the container used beyond the grading process is what something
else did meanwhile.
"""
from __future__ import annotations

import threading
from pathlib import Path

# The container's own memory cgroup, as Docker mounts it inside: cgroup v2, then v1.
CONTAINER_COUNTERS = (Path("/sys/fs/cgroup/memory.current"), Path("/sys/fs/cgroup/memory/memory.usage_in_bytes"))
SAMPLE_S = 0.001
# The container's own CPU accounting, as Docker mounts it inside: cgroup v2 (cpu.stat, microseconds), then v1
# (cpuacct.usage, nanoseconds; alone or co-mounted with cpu).
CONTAINER_CPU = ((Path("/sys/fs/cgroup/cpu.stat"), "usage_usec", 1e-6),
                 (Path("/sys/fs/cgroup/cpuacct/cpuacct.usage"), None, 1e-9),
                 (Path("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage"), None, 1e-9))


def container_counter() -> Path | None:
    """The file that counts this container's memory, or None where there is none to read."""
    for path in CONTAINER_COUNTERS:
        try:
            int(path.read_text())
            return path
        except (OSError, ValueError):
            continue
    return None


def container_cpu_seconds() -> float | None:
    """CPU time every process of this container has used, or None where no accounting is readable."""
    for path, key, unit in CONTAINER_CPU:
        try:
            text = path.read_text()
        except OSError:
            continue
        if key is not None:
            text = next((line.split()[1] for line in text.splitlines() if line.startswith(key + " ")), "")
        try:
            return int(text) * unit
        except ValueError:
            continue
    return None


class Sampler:
    """Reads `counter` every SAMPLE_S on a thread of its own from `start()` to `stop()`; `stop()` returns the
    highest value less the value at the start (bytes), or None when the counter could not be read."""

    def __init__(self, counter: Path) -> None:
        self.counter = counter
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._base: int | None = None
        self._peak: int | None = None

    def _read(self) -> int | None:
        try:
            return int(self.counter.read_text())
        except (OSError, ValueError):
            return None

    def start(self) -> None:
        self._base = self._peak = self._read()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="memory-sampler")
        self._thread.start()

    def _sample(self) -> None:
        # An open file read again from its start costs a few microseconds; one read a millisecond is ~1%
        # of a CPU.
        try:
            handle = self.counter.open("rb", buffering=0)
        except OSError:
            return
        with handle:
            while not self._stop.wait(SAMPLE_S):
                try:
                    handle.seek(0)
                    value = int(handle.read())
                except (OSError, ValueError):
                    continue
                if self._peak is None or value > self._peak:
                    self._peak = value

    def stop(self) -> int | None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        last = self._read()  # the end of a job is part of it
        if last is not None and (self._peak is None or last > self._peak):
            self._peak = last
        if self._base is None or self._peak is None:
            return None
        return max(0, self._peak - self._base)
