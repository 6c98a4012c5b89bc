"""The environment variables the sandboxes and the jail read, and the `Setting` type every layer uses.

Each is a `Setting`: its variable, default and meaning. They are read when asked for (`.get()`), never
cached: a process reads them once at its start, and a test may set one for one call. The grader's own
(grader/core/settings.py) and the web app's (academy/settings.py) are built from the same type, and
docs/web.md lists all of them (`python -m academy.settings --markdown`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping


def flag(value: str) -> bool:
    """An on/off variable: "1", "true", "yes" or "on" (any case) is on; anything else, "0" included, off."""
    return value.strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Setting:
    """One environment variable: read with `get`, unset or empty meaning the default."""
    env: str
    default: Any
    description: str
    parse: Callable[[str], Any] = str
    shown_default: str = ""  # how the docs show a default that is not a plain value

    def get(self, environ: Mapping[str, str] | None = None) -> Any:
        raw = (os.environ if environ is None else environ).get(self.env, "")
        if raw == "":
            return self.default
        try:
            return self.parse(raw)
        except ValueError:
            expected = {"int": "a whole number", "flag": "1 or 0"}.get(getattr(self.parse, "__name__", ""), "")
            raise SettingError(f"{self.env}={raw!r} is not valid{f' (expected {expected})' if expected else ''}: "
                               f"{self.description}") from None

    def is_set(self, environ: Mapping[str, str] | None = None) -> bool:
        return (os.environ if environ is None else environ).get(self.env, "") != ""


class SettingError(ValueError):
    """An environment variable holds a value its setting cannot read; the message names both."""


CGROUP_PARENT = Setting(
    "DLA_CGROUP_PARENT", None, "a cgroup v2 folder delegated to this user, for the local sandbox's per-"
    "submission cgroups when this process's own cgroup cannot be used (docs/sandbox.md)", shown_default="unset")
IN_CONTAINER = Setting(
    "DLA_IN_CONTAINER", False, "set to `1` by the grader image: the container confines learner code, "
    "the harness adds its own layers inside it", parse=flag, shown_default="unset (`1` in the image)")
LEARNER_UID_BASE = Setting(
    "DLA_LEARNER_UID_BASE", 200_000, "first uid of learner processes (uid = base + a pid); the docker "
    "sandbox gives each container its own, as RLIMIT_NPROC counts per uid host-wide", parse=int)

SANDBOX_SETTINGS: tuple[Setting, ...] = (CGROUP_PARENT, IN_CONTAINER, LEARNER_UID_BASE)

# What the jail gives a confined process unless told otherwise (sandbox.jail.Limits).
DEFAULT_TIME_S = 10.0  # wall-clock seconds
DEFAULT_MEMORY_MB = 2048  # all its processes together
SCRATCH_MB = 64  # its private /tmp
MAX_PROCESSES = 64
MAX_FILE_MB = 16

# How a sandbox waits for the process it started (sandbox/process.py).
STARTUP_TIMEOUT_S = 60.0  # start + imports; generous because refills compete for the CPUs
# After a job's time limit: what the process does after its confined child ended (its own checks) and its
# exit. A process still busy after time_limit_s + this is stopped, and the job ends as DEADLINE.
GRACE_S = 20.0
REPLY_CAP = 1024 * 1024  # one reply line; a longer one is the started process's failure
STDERR_CAP = 64 * 1024  # what a sandbox keeps of the started process's stderr
