"""An exercise folder as a plain object: its checks, limits and files (exercise.yaml, starter.py,
solution.py, example.py, checks/, mistakes/). Nothing here imports torch."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grader.core.settings import EXERCISE_MEMORY_MB, EXERCISE_TIME_S

CHECK_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
EVIDENCE = ("outside", "learner")
EXPECT_LINE = re.compile(r"^#\s*expect-fail:\s*(.*)$", re.MULTILINE)
EXPECT_SKIP_LINE = re.compile(r"^#\s*expect-skip:\s*(.*)$", re.MULTILINE)
MAY_PASS_LINE = re.compile(r"^#\s*may-pass:\s*(.*)$", re.MULTILINE)


class CourseError(Exception):
    """The course files are malformed; the message names the file and the problem."""


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
        """The first hint: the one a check's own message may replace (grader/harness/checking.py)."""
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


# libyaml's safe loader where PyYAML has it (its wheels do): the same documents at a fifth of the CPU (the
# whole course, read per grading on the host: 0.12 CPU-s with the pure-Python loader, 0.02 with libyaml).
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> Any:
    """`yaml.safe_load(text)`, by libyaml where it is there; raises yaml.YAMLError. A document libyaml refuses
    is read again by the pure-Python loader, whose error quotes the offending line under a caret."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        if _FAST_LOADER is yaml.SafeLoader:
            raise
        return yaml.load(text, Loader=yaml.SafeLoader)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = parse_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CourseError(f"{path}: file is missing") from None
    except yaml.YAMLError as exc:
        raise CourseError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise CourseError(f"{path}: expected a mapping at the top level")
    return data


def _require(data: dict[str, Any], key: str, path: Path, kind: type = str) -> Any:
    if key not in data:
        raise CourseError(f"{path}: missing required key '{key}'")
    value = data[key]
    if not isinstance(value, kind):
        raise CourseError(f"{path}: '{key}' must be a {kind.__name__}")
    return value


def load_exercise(path: Path, exercise_id: str, *, authoring_files: bool = True) -> Exercise:
    """One exercise folder. `authoring_files=False` skips starter/solution, which the sandbox image lacks."""
    meta_path = path / "exercise.yaml"
    meta = _read_yaml(meta_path)
    checks = []
    for raw in _require(meta, "checks", meta_path, list):
        if not isinstance(raw, dict):
            raise CourseError(f"{meta_path}: each check needs id, title and hint")
        check_id = _require(raw, "id", meta_path)
        if not CHECK_ID.match(check_id):
            raise CourseError(f"{meta_path}: check id '{check_id}' must be lower-case-with-dashes")
        evidence = _require(raw, "evidence", meta_path)
        if evidence not in EVIDENCE:
            raise CourseError(f"{meta_path}: check '{check_id}': evidence must be one of {', '.join(EVIDENCE)}")
        why = str(raw.get("evidence_why", "")).strip()
        if evidence == "learner" and not why:
            raise CourseError(f"{meta_path}: check '{check_id}' rests on evidence from the learner's process: "
                              f"say why that is acceptable in 'evidence_why'")
        after = raw.get("after", []) or []
        if not isinstance(after, list) or any(a not in {c.id for c in checks} for a in after):
            raise CourseError(f"{meta_path}: check '{check_id}': 'after' must list ids of checks declared "
                              f"before it (got {after!r})")
        outcome = raw.get("outcome", False)
        if not isinstance(outcome, bool) or (outcome and evidence != "outside"):
            raise CourseError(f"{meta_path}: check '{check_id}': 'outcome' must be true or false, and true only "
                              "with evidence: outside (an outcome is what the grading side recomputes)")
        checks.append(CheckSpec(check_id, _require(raw, "title", meta_path), _hints(raw, check_id, meta_path),
                                evidence, why, tuple(after), outcome))
    if len({c.id for c in checks}) != len(checks):
        raise CourseError(f"{meta_path}: check ids must be unique")
    limits = meta.get("limits", {}) or {}
    for required in ("starter.py", "solution.py") if authoring_files else ():
        if not (path / required).is_file():
            raise CourseError(f"{path / required}: file is missing")
    if not any((path / "checks").glob("test_*.py")):
        raise CourseError(f"{path / 'checks'}: no pytest check files (test_*.py)")
    return Exercise(
        id=exercise_id,
        path=path,
        title=_require(meta, "title", meta_path),
        entry=_require(meta, "entry", meta_path),
        params=tuple(str(p) for p in meta.get("params", []) or []),
        prompt=str(meta.get("prompt", "")),
        time_limit_s=float(limits.get("time_s", EXERCISE_TIME_S)),
        memory_mb=int(limits.get("memory_mb", EXERCISE_MEMORY_MB)),
        checks=tuple(checks),
        uses_gpu=bool(meta.get("gpu", True)),
        cpu_note=str(meta.get("cpu_note", "") or "").strip(),
        solution_after=_solution_after(meta, meta_path),
    )


def _hints(raw: dict[str, Any], check_id: str, meta_path: Path) -> tuple[str, ...]:
    """`hints: [...]` (revealed one by one), or one `hint:`; not both."""
    if ("hint" in raw) == ("hints" in raw):
        raise CourseError(f"{meta_path}: check '{check_id}' needs 'hints: [...]' or one 'hint:' (not both)")
    hints = raw["hints"] if "hints" in raw else [raw["hint"]]
    if not isinstance(hints, list) or not hints or not all(isinstance(h, str) and h.strip() for h in hints):
        raise CourseError(f"{meta_path}: check '{check_id}': 'hints' must be a list of one or more texts")
    return tuple(h.strip() for h in hints)


def _solution_after(meta: dict[str, Any], meta_path: Path) -> int | None:
    value = meta.get("solution_after")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise CourseError(f"{meta_path}: 'solution_after' must be a number of submissions (1 or more)")
    return value
