"""The environment variables the grader, its harness and its sandboxes read, in one place.

Each is a `Setting`: its variable, default and meaning. They are read when asked for (`.get()`), never
cached: the harness reads them once at its start, and a test may set one for one call. The web app's own
settings (academy/settings.py) are built from the same `Setting` and list these among theirs in
docs/web.md (`python -m academy.settings --markdown`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
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


REPO_EXERCISES = Path(__file__).resolve().parent.parent / "exercises"

EXERCISES = Setting(
    "DLA_EXERCISES", REPO_EXERCISES, "the course folder (course.yaml, one folder per lesson)",
    parse=lambda value: Path(value).resolve(), shown_default="the repository's `exercises/`")
GRADER_IMAGE = Setting(
    "DLA_GRADER_IMAGE", None, "the docker sandbox's image instead of `dla-grader:cpu` / `dla-grader:cuda`",
    shown_default="unset")
CGROUP_PARENT = Setting(
    "DLA_CGROUP_PARENT", None, "a cgroup v2 folder delegated to this user, for the local sandbox's per-"
    "submission cgroups when this process's own cgroup cannot be used (docs/sandbox.md)", shown_default="unset")
IN_CONTAINER = Setting(
    "DLA_IN_CONTAINER", False, "set to `1` by the grader image: the container confines learner code, "
    "the harness adds its own layers inside it", parse=flag, shown_default="unset (`1` in the image)")
LEARNER_UID_BASE = Setting(
    "DLA_LEARNER_UID_BASE", 200_000, "first uid of learner processes (uid = base + a pid); the docker "
    "sandbox gives each container its own, as RLIMIT_NPROC counts per uid host-wide", parse=int)

# Every grader setting, for the docs table and its test.
GRADER_SETTINGS: tuple[Setting, ...] = (EXERCISES, GRADER_IMAGE, CGROUP_PARENT, IN_CONTAINER, LEARNER_UID_BASE)


# The limits every sandbox applies, in one place (an exercise.yaml's `limits:` overrides the first two).
DEFAULT_TIME_S = 10.0  # wall-clock seconds for the learner's code
DEFAULT_MEMORY_MB = 2048  # the learner's memory
GRADER_MEMORY_MB = 1024  # the grading side's own share (torch, pytest) on top of the learner's
SCRATCH_MB = 64  # the learner's private /tmp
MAX_PROCESSES = 64
MAX_FILE_MB = 16


def exercises_root() -> Path:
    """The course folder: $DLA_EXERCISES, else the repository's own `exercises/`."""
    return Path(EXERCISES.get())
