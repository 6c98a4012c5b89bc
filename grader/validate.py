"""`grader validate`: prove an exercise's checks tell right from wrong.

The reference solution must pass every check, and each known-wrong submission in `mistakes/` must fail
exactly the checks its `# expect-fail:` line declares (no more, no fewer).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.course import CheckSpec, Exercise
from grader.grading import run_submission


@dataclass
class Case:
    exercise: str
    path: Path
    expected_fail: frozenset[str]
    result: dict[str, Any]
    checks: tuple[CheckSpec, ...] = ()

    @property
    def failed(self) -> frozenset[str]:
        return frozenset(c["id"] for c in self.result["checks"] if not c["passed"])

    @property
    def caught_outside(self) -> bool:
        """Whether a check whose evidence the grading side recomputes (docs/threat-model.md) fails too:
        a mistake caught only by records of the learner's process could be forged past."""
        outside = {check.id for check in self.checks if check.evidence == "outside"}
        return bool(self.failed & outside)

    @property
    def ok(self) -> bool:
        if self.result["status"] == "infra-error" or self.result.get("problems"):
            return False
        return self.failed == self.expected_fail

    def explain(self) -> str:
        if self.result["status"] == "infra-error":
            return f"grader failed: {self.result['error']['message']}"
        if self.result.get("problems"):
            return "check problems: " + "; ".join(self.result["problems"])
        if self.result.get("error") and self.expected_fail != self.failed:
            return f"{self.result['status']}: {self.result['error']['message']}"
        parts = []
        if self.expected_fail - self.failed:
            parts.append(f"expected to fail but passed: {', '.join(sorted(self.expected_fail - self.failed))}")
        if self.failed - self.expected_fail:
            extra = sorted(self.failed - self.expected_fail)
            messages = [f"{c['id']} ({c['message']})" for c in self.result["checks"] if c["id"] in extra]
            parts.append(f"failed unexpectedly: {'; '.join(messages)}")
        return "; ".join(parts)


def validate_exercise(exercise: Exercise, sandbox: str = "auto", jobs: int = 2) -> list[Case]:
    """Grade the solution and every mistake; one Case each, solution first."""
    plan = [(exercise.solution_path, frozenset())]
    plan += [(m.path, m.expect_fail) for m in exercise.mistakes()]

    def grade(item: tuple[Path, frozenset[str]]) -> Case:
        path, expected = item
        result = run_submission(exercise, path.read_text(encoding="utf-8"), sandbox=sandbox)
        return Case(exercise.id, path, expected, result, exercise.checks)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(grade, plan))
