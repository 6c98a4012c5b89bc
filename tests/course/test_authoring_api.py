"""Exercises are written against the authoring API (grader.checks), never against the harness's internals:
the harness may change under them as long as the API stays."""
from __future__ import annotations

import ast
import re

from tests.support.paths import EXERCISES


def test_no_exercise_imports_the_harness() -> None:
    offenders = []
    for path in sorted(EXERCISES.rglob("checks/*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            offenders += [f"{path.relative_to(EXERCISES)}: {name}" for name in names
                          if name == "grader.harness" or name.startswith("grader.harness.")]
    assert offenders == []


def test_every_exercise_draws_what_the_code_did() -> None:
    """Issue 18: every verdict carries a timeline or figures, drawn by the exercise's own @figure test."""
    missing = [str(meta.parent.relative_to(EXERCISES)) for meta in sorted(EXERCISES.rglob("exercise.yaml"))
               if not any(re.search(r"^@(\w+\.)?figure\b", path.read_text(), re.MULTILINE)
                          for path in (meta.parent / "checks").glob("test_*.py"))]
    assert missing == []
