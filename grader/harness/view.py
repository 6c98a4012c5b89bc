"""The learner's file system (NAMESPACES): what grading needs, nothing of the course or the host, and
nothing of the grading side's correct runs."""
from __future__ import annotations

from pathlib import Path

from sandbox.jail.view import View, interpreter_view

# The grading side's correct runs (grader/reference/): shown empty in the learner's view.
GRADING_ONLY = Path(__file__).resolve().parents[1] / "reference"


def learner_view(course_root: Path, hide: list[Path] | None = None) -> View:
    """The interpreter, its packages, `grader` (its `reference` folder masked) and `sandbox`; never the
    exercises folder (solutions, checks with their correct runs) or any path in `hide` (the web app's
    instance folder)."""
    import sandbox.jail

    packages = [Path(__file__).resolve().parents[1], Path(sandbox.jail.__file__).resolve().parents[1]]
    return interpreter_view(packages, [course_root, *(hide or [])], [GRADING_ONLY])
