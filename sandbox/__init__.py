"""Where untrusted work runs: a started process that confines what it runs (the jail, sandbox/jail/), seen
from the host. The sandbox knows nothing of grading: it starts an `Entry`, hands it one request line and
returns the one line it answers, within a deadline.

    local       a process of this machine, which confines its children with namespaces, an allowlist
                view, a cgroup and seccomp (sandbox/local.py); refused where the host cannot give all of them
    docker      a single-use hardened container (sandbox/docker.py)
    unconfined  `grader check --sandbox unconfined`: rlimits only, never automatic, never for a service

Either can be given a warm pool (sandbox/pool.py) of started, single-use processes. Which one a service
gets, and what entry it starts, is the caller's choice (grader/host/sandboxes.py for grading).

The entry contract (`Entry.command`): it prints one line when it is ready (anything: the first line means
ready), reads one line on stdin, prints one reply line on stdout and exits; started with `--fork-server
FD` it forks a fresh copy of itself onto the three descriptors each message on the Unix socket FD
carries (sandbox/forkserver.py); started with `--preflight` it prints one JSON object whose "problems"
list says what keeps this host from confining its work (sandbox/jail/preflight.py).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class SandboxError(Exception):
    """The sandbox itself failed (not the work it ran): graded as infra-error, exit code 3."""


@dataclass(frozen=True)
class Entry:
    """The command a sandbox starts (the contract above), and the environment it gets besides PATH."""
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    def with_args(self, *args: str) -> list[str]:
        return [*self.command, *args]


@dataclass(frozen=True)
class Work:
    """One request for a sandbox: the line its entry reads, the entry's own time limit for the work (the
    sandbox stops the process at that plus settings.GRACE_S), the memory the whole process may use, and
    whether it wants a GPU. `entry` is what a local sandbox starts for it (a container runs its image's)."""
    line: bytes
    entry: Entry
    time_limit_s: float
    memory_mb: int
    gpu: bool = False


class Ending(str, enum.Enum):
    REPLIED = "replied"  # `Reply.line` holds the entry's answer
    DEADLINE = "deadline"  # still busy at the work's limit plus the grace: stopped
    OUT_OF_MEMORY = "out-of-memory"  # its container was killed for memory


@dataclass(frozen=True)
class Reply:
    ending: Ending
    line: bytes | None = None
    memory_mb: int | None = None  # the limit that was hit (OUT_OF_MEMORY)


class Sandbox(Protocol):
    name: str

    def available(self) -> tuple[bool, str]:
        """(usable here?, why not)."""

    def require(self) -> None:
        """SandboxError saying why, unless usable here."""

    def run(self, work: Work) -> Reply:
        """Run one request and return how it ended; SandboxError when the sandbox itself failed."""

    def close(self) -> None:
        """Stop its warm processes, if it has any."""
