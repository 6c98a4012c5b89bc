"""How a confined process is confined: one strategy per mode, each an ordered sequence of steps.

    NAMESPACES   the local sandbox: a cgroup, every namespace, an allowlist root, a uid of its own (as
                 root) or a nested user namespace (not root), rlimits, no capabilities, non-dumpable,
                 seccomp. Every step is applied, or the confined code does not run.
    CONTAINER    inside the grader image: Docker provides the network, file system, PID namespace and
                 cgroup; the child takes a uid and a folder of its own, rlimits, non-dumpable, seccomp.
    NONE         `--sandbox unconfined`, one's own code on one's own machine: rlimits only.

The middle process (the parent of the confined one) runs a strategy's `middle` steps; the confined
process runs its `child` steps, in order, after the job's `prepare` and before its `run`. A step that
raises stops the sequence and the job is refused (never a silent downgrade).
"""
from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from sandbox.jail import identity, namespaces, rlimits
from sandbox.jail.libc import PR_SET_DUMPABLE, Libc
from sandbox.settings import DEFAULT_MEMORY_MB, DEFAULT_TIME_S, IN_CONTAINER, MAX_FILE_MB, MAX_PROCESSES, SCRATCH_MB

if TYPE_CHECKING:
    from sandbox.jail.cgroups import SubmissionCgroup
    from sandbox.jail.view import View


class Confinement(str, enum.Enum):
    NAMESPACES = "namespaces"
    CONTAINER = "container"
    NONE = "none"


@dataclass(frozen=True)
class Limits:
    time_s: float = DEFAULT_TIME_S
    memory_mb: int = DEFAULT_MEMORY_MB
    max_processes: int = MAX_PROCESSES
    max_file_mb: int = MAX_FILE_MB
    scratch_mb: int = SCRATCH_MB


@dataclass
class Child:
    """What the steps of one confined process know about it."""
    limits: Limits
    view: View | None
    as_root: bool
    uid: int  # its own uid (used as root)
    parent: int  # the middle process: the confined process dies with it
    libc: Libc = field(default_factory=Libc)
    scratch: str = "/tmp"  # its working folder and home, set by a step


@dataclass
class Middle:
    """What the steps of the middle process know."""
    as_root: bool
    cgroup: SubmissionCgroup | None
    libc: Libc = field(default_factory=Libc)


Step = Callable[[Child], None]
MiddleStep = Callable[[Middle], None]


# -- the middle process's steps ---------------------------------------------------------------------

def join_cgroup(middle: Middle) -> None:
    """Before any namespace: everything from here on is counted, limited and killable together."""
    if middle.cgroup is None:
        raise OSError("no cgroup for the confined processes")
    middle.cgroup.add(0)


def new_namespaces(middle: Middle) -> None:
    namespaces.enter(middle.libc, middle.as_root)


# -- the confined process's steps -------------------------------------------------------------------

def enter_view(child: Child) -> None:
    from sandbox.jail import view as views

    if child.view is None:
        raise OSError("no view to enter")
    views.enter(child.view, child.limits.scratch_mb, child.uid if child.as_root else None)


def set_rlimits(child: Child) -> None:
    rlimits.apply(child.limits, child.as_root)


def set_rlimits_unprivileged(child: Child) -> None:
    rlimits.apply(child.limits, False)


def lock_mounts(child: Child) -> None:
    if not child.as_root:
        namespaces.lock_mounts(child.libc)


def drop_privileges(child: Child) -> None:
    """As root: a fresh uid and no capabilities; not root: the capabilities of its user namespaces dropped."""
    identity.drop_all(child.libc, child.uid if child.as_root else None)


def drop_privileges_in_container(child: Child) -> None:
    if child.as_root:
        identity.drop_all(child.libc, child.uid)


def own_scratch(child: Child) -> None:
    """A private 0700 folder on the container's /tmp, made under the new uid."""
    child.scratch = f"/tmp/learner-{child.uid}"
    os.mkdir(child.scratch, 0o700)
    os.chdir(child.scratch)


def enter_host_scratch(child: Child) -> None:
    """The folder Jail.run made for this job in the host's temp folder, and removes after it."""
    os.chdir(child.scratch)


def die_with_parent(child: Child) -> None:
    child.libc.die_with_parent(child.parent)  # after the uid change, which clears it


def not_dumpable(child: Child) -> None:
    """Its /proc files become root's and no process of its uid may trace it or open its memory (seccomp keeps
    it from undoing this): in the container, where the memory meter may be the kernel's peak resident set,
    it cannot reset that through /proc/self/clear_refs, and a process forked before the confined code loads
    (a grading-side helper) is out of its reach."""
    child.libc.prctl(PR_SET_DUMPABLE, 0)


def install_seccomp(child: Child) -> None:
    from sandbox.jail import seccomp

    seccomp.install()  # sets no_new_privs first; the last step before the job runs


@dataclass(frozen=True)
class Strategy:
    middle: tuple[MiddleStep, ...]
    child: tuple[Step, ...]
    uses_cgroup: bool = False
    host_scratch: bool = False  # no view or container gives the job a /tmp of its own: the jail makes one


STRATEGIES: dict[Confinement, Strategy] = {
    Confinement.NAMESPACES: Strategy(
        middle=(join_cgroup, new_namespaces),
        child=(enter_view, set_rlimits, lock_mounts, drop_privileges, die_with_parent, not_dumpable,
               install_seccomp),
        uses_cgroup=True),
    Confinement.CONTAINER: Strategy(
        middle=(),
        child=(set_rlimits, drop_privileges_in_container, own_scratch, die_with_parent, not_dumpable,
               install_seccomp)),
    Confinement.NONE: Strategy(middle=(), child=(set_rlimits_unprivileged, enter_host_scratch, die_with_parent),
                               host_scratch=True),
}


def in_container() -> bool:
    """True inside the grader image, where the container provides what namespaces would."""
    return bool(IN_CONTAINER.get())
