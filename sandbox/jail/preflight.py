"""Can this host confine jobs under NAMESPACES? Asked before a service accepts any.

`problems(view)` tries the real thing: a cgroup for a job, the seccomp filter, and a trivial job run
through the same confinement (namespaces, the view, dropped capabilities). It forks, so it runs in a
fresh process of its own (the local sandbox starts one: a multi-threaded web server never forks for
it); ~0.1 s, and the sandbox remembers the answer.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from sandbox.jail.view import View

@dataclass(frozen=True)
class Echo:
    """The trivial job: confined, it sends back one word."""

    def prepare(self, fds: Mapping[str, int]) -> None:
        pass

    def run(self, fds: Mapping[str, int]) -> bytes:
        return b"confined"


def problems(view: View) -> list[str]:
    from sandbox.jail import cgroups, seccomp
    from sandbox.jail.confinement import Confinement, Limits
    from sandbox.jail.jail import Jail, cgroup_root

    found = []
    try:
        cgroup_root()
    except cgroups.CgroupUnavailable as exc:
        more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        found.append(f"no cgroup for submissions: {exc.problems[0]}{more}")
    ok, why = seccomp.available()
    if not ok:
        found.append(f"no seccomp filter: {why}")
    if found:  # the full run below needs both; still say whether namespaces would work
        return found + namespaces_problem()
    with Jail(Confinement.NAMESPACES, view) as jail:
        outcome = jail.run(Echo(), Limits(time_s=10, memory_mb=512))
    if outcome.refused:
        found.append(outcome.refused)
    elif outcome.exit_code != 0 or outcome.payload != b"confined":
        found.append(f"a confined test process failed (exit {outcome.exit_code}, signal {outcome.signal}): "
                     f"{outcome.output[-500:]}")
    return found


def namespaces_problem() -> list[str]:
    """Whether this process may create the namespaces jobs run in (tried in a child)."""
    from sandbox.jail import namespaces
    from sandbox.jail.libc import Libc

    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            Libc().unshare(namespaces.flags(os.geteuid() == 0))
            os._exit(0)
        except OSError as exc:
            os._exit(exc.errno or 1)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return [] if code == 0 else [f"no namespaces: unshare: {os.strerror(code) if code > 0 else code}"]
