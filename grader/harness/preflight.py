"""Can the local sandbox confine learner code on this host? Asked before a service accepts submissions.

    python -m grader.harness.preflight [--exercises DIR] [--hide PATH ...]

prints one JSON object, {"ok": true} or {"ok": false, "problems": [...]}, after trying the real thing:
a cgroup for a submission, the seccomp filter, and a trivial target run through the same confinement
as learner code (namespaces, the allowlist view, dropped capabilities). It runs in a fresh process, so
a multi-threaded web server never forks for it; ~0.1 s, and the sandbox remembers the answer.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from grader.settings import exercises_root

ADVICE = ("Run the grader as root; or, as another user, enable unprivileged user namespaces and delegate "
          "a cgroup subtree (DLA_CGROUP_PARENT, see docs/sandbox.md); or use the docker sandbox "
          "(sandbox/ensure-engine && sandbox/build-images).")


def problems(root: Path, hide: list[Path]) -> list[str]:
    from grader.harness import cgroups, seccomp
    from grader.harness.isolation import Confinement, Limits, cgroup_root, run_confined
    from grader.harness.view import grader_view

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
        return found + _namespaces_problem()
    outcome = run_confined(lambda: b"confined", Limits(time_s=10, memory_mb=512), Confinement.NAMESPACES,
                           grader_view([root, *hide]))
    if outcome.refused:
        found.append(outcome.refused)
    elif outcome.exit_code != 0 or outcome.payload != b"confined":
        found.append(f"a confined test process failed (exit {outcome.exit_code}, signal {outcome.signal}): "
                     f"{outcome.output[-500:]}")
    return found


def _namespaces_problem() -> list[str]:
    """Whether this process may create the namespaces learner code runs in (tried in a child)."""
    import os

    from grader.harness import isolation

    flags = isolation.CLONE_NEWPID | isolation.CLONE_NEWNET | isolation.CLONE_NEWNS | isolation.CLONE_NEWIPC
    if os.geteuid() != 0:
        flags |= isolation.CLONE_NEWUSER
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            isolation._Libc().unshare(flags)
            os._exit(0)
        except OSError as exc:
            os._exit(exc.errno or 1)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return [] if code == 0 else [f"no namespaces: unshare: {os.strerror(code) if code > 0 else code}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.harness.preflight")
    parser.add_argument("--exercises", type=Path)
    parser.add_argument("--hide", action="append", type=Path, default=[])
    args = parser.parse_args(argv)
    root = (args.exercises or exercises_root()).resolve()
    found = problems(root, [root, *args.hide])
    print(json.dumps({"ok": not found, "problems": found}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
