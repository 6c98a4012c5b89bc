"""Per-process limits: address space, file size, CPU time, no core dumps, file descriptors, processes
(as root, where the uid is the confined process's own), and first in line for the OOM killer."""
from __future__ import annotations

import resource
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sandbox.jail.confinement import Limits


def apply(limits: Limits, as_root: bool) -> None:
    address_space = current_vm_bytes() + limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    file_bytes = limits.max_file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    cpu = int(limits.time_s) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    if as_root:  # counted per uid: only a uid of its own makes it a per-process-tree bound
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes))
    try:  # under memory pressure, the kernel kills the confined processes first
        Path("/proc/self/oom_score_adj").write_text("1000")
    except OSError:
        pass


def current_vm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0
