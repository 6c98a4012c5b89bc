"""An exercise folder as a plain object: its checks, limits and files (exercise.yaml, starter.py,
solution.py, example.py, checks/, mistakes/). Nothing here imports torch."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.core import coursefiles
from grader.core.coursefiles import CourseError, parse_yaml
from grader.core.settings import EXERCISE_MEMORY_MB, EXERCISE_TIME_S

__all__ = ["CheckSpec", "CourseError", "Exercise", "Mistake", "load_exercise", "parse_yaml"]
EXPECT_LINE = re.compile(r"^#\s*expect-fail:\s*(.*)$", re.MULTILINE)
EXPECT_SKIP_LINE = re.compile(r"^#\s*expect-skip:\s*(.*)$", re.MULTILINE)
MAY_PASS_LINE = re.compile(r"^#\s*may-pass:\s*(.*)$", re.MULTILINE)


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    # Revealed one at a time, on request, after the check failed. exercise.yaml gives `hints: [...]` or
    # one `hint:` (a one-item list): one schema for every hint, which a translation can follow item by item.
    hints: tuple[str, ...]
    # Where the verdict's deciding numbers come from (docs/threat-model.md): "outside" when the grading
    # process compares them with a recomputation of its own; "learner" when the verdict rests only on
    # what was recorded inside the learner's process, which `evidence_why` then justifies.
    evidence: str = "learner"
    evidence_why: str = ""
    # Checks whose failure explains this one's: when this check fails after one of them failed, the
    # result reports it "skipped" because of that one (one mistake, one message).
    after: tuple[str, ...] = ()
    # Whether this (outside) check judges the training's outcome: the weights or loss against the grading
    # side's correct run. When every such check passed, no other message may claim a wrong outcome
    # (grader/host/claims.py).
    outcome: bool = False

    @property
    def hint(self) -> str:
        """The first hint: the one a check's own message may replace (grader/checks/grading/checking.py)."""
        return self.hints[0]


@dataclass(frozen=True)
class Mistake:
    path: Path
    expect_fail: frozenset[str]
    description: str
    expect_skip: frozenset[str] | None = None  # declared: exactly these are skipped; None: not checked
    # Declared failed or skipped, but passing for some scenario seeds: a mistake whose effect on an outcome
    # is under the check's tolerance for some draws (`# may-pass:`).
    may_pass: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Exercise:
    id: str  # "<lesson>/<slug>"
    path: Path
    title: str
    entry: str
    params: tuple[str, ...]
    prompt: str
    time_limit_s: float
    memory_mb: int
    checks: tuple[CheckSpec, ...]
    uses_gpu: bool = True
    cpu_note: str = ""  # shown to learners when graded without a GPU, where it matters to the exercise
    # The reference solution (solution.py with solution.md) is offered after a passing submission, or
    # after this many submissions when set (`solution_after:` in exercise.yaml).
    solution_after: int | None = None

    @property
    def lesson_id(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def checks_dir(self) -> Path:
        return self.path / "checks"

    @property
    def course_root(self) -> Path:
        """The course folder that holds this exercise (<course>/<lesson>/<exercise>), resolved."""
        return self.path.resolve().parent.parent

    @property
    def solution_path(self) -> Path:
        return self.path / "solution.py"

    @property
    def example_path(self) -> Path:
        """`example.py`: `example(device)` builds the small inputs a Run calls the learner's function with."""
        return self.path / "example.py"

    def solution_code(self) -> str:
        return self.solution_path.read_text(encoding="utf-8")

    def solution_markdown(self) -> str:
        """solution.md: a short explanation of the reference solution ("" when the folder has none)."""
        path = self.path / "solution.md"
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def starter_code(self) -> str:
        return (self.path / "starter.py").read_text(encoding="utf-8")

    def mistakes(self) -> list[Mistake]:
        found = []
        for path in sorted((self.path / "mistakes").glob("*.py")):
            text = path.read_text(encoding="utf-8")
            match = EXPECT_LINE.search(text)
            if not match:
                raise CourseError(f"{path}: a mistake must declare '# expect-fail: <check-id>, ...'")
            ids = _ids(match)
            skip_match = EXPECT_SKIP_LINE.search(text)
            skips = _ids(skip_match) if skip_match else None
            may_pass = _ids(MAY_PASS_LINE.search(text))
            declared = ids | (skips or frozenset())
            unknown = (declared | may_pass) - {c.id for c in self.checks}
            if unknown:
                raise CourseError(f"{path}: expect-fail/expect-skip/may-pass name unknown checks {sorted(unknown)}")
            if may_pass - declared:
                raise CourseError(f"{path}: may-pass names {sorted(may_pass - declared)}, which expect-fail and "
                                  "expect-skip do not declare")
            if not ids - may_pass:
                raise CourseError(f"{path}: may-pass names every check of expect-fail; a mistake must always fail one")
            doc = re.search(r"^#\s*mistake:\s*(.*)$", text, re.MULTILINE)
            found.append(Mistake(path, ids, doc.group(1).strip() if doc else path.stem, skips, may_pass))
        return found


def _ids(match: re.Match[str] | None) -> frozenset[str]:
    """The check ids of a header line (`# expect-fail: a, b`); a reason in parentheses may follow them."""
    if not match:
        return frozenset()
    return frozenset(part.strip() for part in match.group(1).split("(", 1)[0].split(",") if part.strip())


def load_exercise(path: Path, exercise_id: str, *, authoring_files: bool = True) -> Exercise:
    """One exercise folder. `authoring_files=False` skips starter/solution, which the sandbox image lacks.
    exercise.yaml's keys, their types and defaults: schemas/exercise.json; here, what a schema cannot say."""
    meta_path = path / "exercise.yaml"
    meta = coursefiles.read(meta_path, "exercise")
    assert meta is not None
    checks: list[CheckSpec] = []
    for raw in meta["checks"]:
        check_id, evidence, why = raw["id"], raw["evidence"], raw["evidence_why"].strip()
        if evidence == "learner" and not why:
            raise CourseError(f"{meta_path}: check '{check_id}' rests on evidence from the learner's process: "
                              f"say why that is acceptable in 'evidence_why'")
        if any(a not in {c.id for c in checks} for a in raw["after"]):
            raise CourseError(f"{meta_path}: check '{check_id}': 'after' must list ids of checks declared "
                              f"before it (got {raw['after']!r})")
        if raw["outcome"] and evidence != "outside":
            raise CourseError(f"{meta_path}: check '{check_id}': 'outcome' must be true or false, and true only "
                              "with evidence: outside (an outcome is what the grading side recomputes)")
        checks.append(CheckSpec(check_id, raw["title"], _hints(raw, check_id, meta_path), evidence, why,
                                tuple(raw["after"]), raw["outcome"]))
    if len({c.id for c in checks}) != len(checks):
        raise CourseError(f"{meta_path}: check ids must be unique")
    for required in ("starter.py", "solution.py") if authoring_files else ():
        if not (path / required).is_file():
            raise CourseError(f"{path / required}: file is missing")
    if not any((path / "checks").glob("test_*.py")):
        raise CourseError(f"{path / 'checks'}: no pytest check files (test_*.py)")
    return Exercise(
        id=exercise_id,
        path=path,
        title=meta["title"],
        entry=meta["entry"],
        params=tuple(meta["params"]),
        prompt=meta["prompt"],
        time_limit_s=float(meta["limits"].get("time_s", EXERCISE_TIME_S)),
        memory_mb=int(meta["limits"].get("memory_mb", EXERCISE_MEMORY_MB)),
        checks=tuple(checks),
        uses_gpu=meta["gpu"],
        cpu_note=meta["cpu_note"].strip(),
        solution_after=meta["solution_after"],
    )


def _hints(raw: dict[str, Any], check_id: str, meta_path: Path) -> tuple[str, ...]:
    """`hints: [...]` (revealed one by one), or one `hint:`; not both."""
    if ("hint" in raw) == ("hints" in raw):
        raise CourseError(f"{meta_path}: check '{check_id}' needs 'hints: [...]' or one 'hint:' (not both)")
    hints = raw["hints"] if "hints" in raw else [raw["hint"]]
    if not all(h.strip() for h in hints):
        raise CourseError(f"{meta_path}: check '{check_id}': 'hints' must be a list of one or more texts")
    return tuple(h.strip() for h in hints)
