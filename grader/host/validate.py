"""`grader validate`: prove an exercise's checks tell right from wrong.

The reference solution must pass every check, and each known-wrong submission in `mistakes/` must fail
exactly the checks its `# expect-fail:` line declares (no more, no fewer). Checks a failure explains are
"skipped", not failed (grader/core/result.py); a mistake may declare them with `# expect-skip:`, and then
exactly those must be skipped. A check named in `# may-pass:` as well may pass instead, for the scenario
seeds where the mistake's effect on it stays under its tolerance (every grading draws a seed). No failing
message may claim an outcome the outside checks disprove (grader.host.claims).
"""
from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from grader.core.course import CheckSpec, Exercise, Mistake
from grader.core.result import Result
from grader.host.claims import contradictions
from grader.host.grading import GradesWork, run_submission

if TYPE_CHECKING:
    from grader.host.sandboxes import HarnessSandbox


@dataclass
class Case:
    exercise: str
    path: Path
    declared_fail: frozenset[str]
    result: Result
    checks: tuple[CheckSpec, ...] = ()
    declared_skip: frozenset[str] | None = None
    may_pass: frozenset[str] = frozenset()

    def _with(self, status: str) -> frozenset[str]:
        return frozenset(c["id"] for c in self.result["checks"] if c["status"] == status)

    @property
    def passed_may_pass(self) -> frozenset[str]:
        """The `may-pass` checks that passed with this grading's seed."""
        return self.may_pass & self._with("passed")

    @property
    def expected_fail(self) -> frozenset[str]:
        """The declared failures, less the `may-pass` ones that passed with this grading's seed."""
        return self.declared_fail - self.passed_may_pass

    @property
    def expected_skip(self) -> frozenset[str] | None:
        if self.declared_skip is None:
            return None
        return self.declared_skip - self.passed_may_pass

    @property
    def failed(self) -> frozenset[str]:
        return self._with("failed")

    @property
    def skipped(self) -> frozenset[str]:
        return self._with("skipped")

    @property
    def caught_outside(self) -> bool:
        """Whether a check whose evidence the grading side recomputes (docs/threat-model.md) fails too
        (or fails and is reported skipped, explained by an earlier failure): a mistake caught only by
        records of the learner's process could be forged past."""
        outside = {check.id for check in self.checks if check.evidence == "outside"}
        explained = frozenset(c["id"] for c in self.result["checks"]
                              if c["status"] == "skipped" and c["because"] != "load")
        return bool((self.failed | explained) & outside)

    @property
    def contradictions(self) -> list[str]:
        """Failing messages that the outside checks' own evidence disproves (grader.host.claims)."""
        return contradictions(self.result, self.checks)

    @property
    def ok(self) -> bool:
        if self.result["status"] == "infra-error" or self.result.get("problems") or self.contradictions:
            return False
        if self.expected_skip is not None and self.skipped != self.expected_skip:
            return False
        return self.failed == self.expected_fail

    def summary(self) -> str:
        """What this case's checks did next to what its file declares: "passes every check", or e.g.
        "failed scaled-backward (declared: scaled-backward); skipped runs (declared: runs)". A `may-pass`
        check that passed is left out of what is declared, and named as passed."""
        if not (self.failed or self.skipped or self.expected_fail or self.expected_skip):
            return "passes every check"
        text = f"failed {_ids(self.failed)} (declared: {_ids(self.expected_fail)})"
        if self.expected_skip is not None and (self.skipped or self.expected_skip):
            text += f"; skipped {_ids(self.skipped)} (declared: {_ids(self.expected_skip)})"
        elif self.skipped:
            text += f"; skipped {_ids(self.skipped)}"
        if self.passed_may_pass:
            text += f"; passed {_ids(self.passed_may_pass)} (may pass with this seed)"
        return text

    def report(self) -> str:
        """The summary, and what is wrong when the case is not ok, with the seed that replays it (`grader check
        --seed N`): the report's line for this grading."""
        if self.ok:
            return self.summary()
        seed = self.result.get("seed")
        return f"{self.summary()}; {self.explain()}" + (f" (seed {seed})" if seed is not None else "")

    def explain(self) -> str:
        if self.result["status"] == "infra-error":
            return f"grader failed: {(self.result['error'] or {}).get('message', '')}"
        if self.result.get("problems"):
            return "check problems: " + "; ".join(self.result["problems"])
        if self.contradictions:
            return "messages contradict the evidence: " + "; ".join(self.contradictions)
        if (error := self.result.get("error")) and self.expected_fail != self.failed:
            return f"{self.result['status']}: {error['message']}"
        parts = []
        if self.expected_skip is not None and self.skipped != self.expected_skip:
            parts.append(f"skipped {', '.join(sorted(self.skipped)) or 'nothing'}, declared "
                         f"{', '.join(sorted(self.expected_skip)) or 'nothing'}")
        if self.expected_fail - self.failed:
            for label, ids in (("skipped", self.expected_fail & self.skipped),
                               ("passed", self.expected_fail - self.failed - self.skipped)):
                if ids:
                    parts.append(f"expected to fail but {label}: {', '.join(sorted(ids))}")
        if self.failed - self.expected_fail:
            extra = sorted(self.failed - self.expected_fail)
            messages = [f"{c['id']} ({c['message']})" for c in self.result["checks"] if c["id"] in extra]
            parts.append(f"failed unexpectedly: {'; '.join(messages)}")
        return "; ".join(parts)


def _ids(ids: frozenset[str]) -> str:
    return ", ".join(sorted(ids)) or "nothing"


@contextlib.contextmanager
def validation_sandbox(name: str, course_root: Path, jobs: int = 2) -> Iterator[str | HarnessSandbox]:
    """The sandbox `name` with a warm pool of `jobs` processes for a whole validation (each case then waits
    a fraction of a second instead of a torch start-up); the name itself, graded cold, where no pool can
    start here (each case's verdict then says why)."""
    from grader.host.sandboxes import get_sandbox
    from sandbox import SandboxError

    try:
        made = get_sandbox(name, course_root=course_root, warm=jobs)
    except SandboxError:
        yield name
        return
    try:
        yield made
    finally:
        made.close()


def validate_exercise(exercise: Exercise, sandbox: str | GradesWork = "auto", jobs: int = 2,
                      seeds: int = 1) -> list[Case]:
    """Grade the solution and every mistake, each with `seeds` random scenario seeds (a sweep for verdicts
    that move with the seed); one Case per grading, solution first, a file's gradings together."""
    files = [Mistake(exercise.solution_path, frozenset(), "the reference solution", frozenset())]
    files += exercise.mistakes()
    plan = [case for case in files for _ in range(max(1, seeds))]

    def run_case(case: Mistake) -> Case:
        result = run_submission(exercise, case.path.read_text(encoding="utf-8"), sandbox=sandbox)
        return Case(exercise.id, case.path, case.expect_fail, result, exercise.checks, case.expect_skip,
                    case.may_pass)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(run_case, plan))
