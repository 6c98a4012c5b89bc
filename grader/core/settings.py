"""The environment variables the grader reads, in one place, and the limits every grading shares.

Each is a `Setting` (sandbox/settings.py): its variable, default and meaning, read when asked for
(`.get()`), never cached. The sandboxes' own are listed there; `GRADER_SETTINGS` holds both, for the
docs table the web app prints (`python -m academy.settings --markdown`) and its test.
"""
from __future__ import annotations

from pathlib import Path

from sandbox.settings import DEFAULT_MEMORY_MB, DEFAULT_TIME_S, SANDBOX_SETTINGS, Setting

REPO_EXERCISES = Path(__file__).resolve().parents[2] / "exercises"

EXERCISES = Setting(
    "DLA_EXERCISES", REPO_EXERCISES, "the course folder (course.yaml, one folder per lesson)",
    parse=lambda value: Path(value).resolve(), shown_default="the repository's `exercises/`")
GRADER_IMAGE = Setting(
    "DLA_GRADER_IMAGE", None, "the docker sandbox's image instead of `dla-grader:cpu` / `dla-grader:cuda`",
    shown_default="unset")

# Every grader and sandbox setting, for the docs table and its test.
GRADER_SETTINGS: tuple[Setting, ...] = (EXERCISES, GRADER_IMAGE, *SANDBOX_SETTINGS)

# An exercise.yaml's `limits:` overrides the first two (the jail's defaults).
EXERCISE_TIME_S = DEFAULT_TIME_S  # wall-clock seconds for the learner's code
EXERCISE_MEMORY_MB = DEFAULT_MEMORY_MB  # the learner's memory, all its processes together
GRADER_MEMORY_MB = 1024  # the grading side's own share (torch, pytest) on top of the learner's


def exercises_root() -> Path:
    """The course folder: $DLA_EXERCISES, else the repository's own `exercises/`."""
    return Path(EXERCISES.get())
