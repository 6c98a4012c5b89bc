"""The learner's file system (NAMESPACES): what grading needs, nothing of the course or the host."""
from __future__ import annotations

from pathlib import Path

from sandbox.jail.view import View, interpreter_view


def learner_view(course_root: Path, hide: list[Path] | None = None) -> View:
    """The interpreter, its packages, `grader` and `sandbox`; never the exercises folder (solutions,
    hidden checks) or any path in `hide` (the web app's instance folder)."""
    import sandbox.jail

    packages = [Path(__file__).resolve().parents[1], Path(sandbox.jail.__file__).resolve().parents[1]]
    return interpreter_view(packages, [course_root, *(hide or [])])
