"""The real-world corpus (issue 12, item 5): submissions written in the styles of public training loops
and public bug reports, each graded for real and held to the verdict its header declares.

A corpus file lives at tests/corpus/<lesson>/<exercise>/<name>.py and starts with a header of comment
lines (README.md in this folder):

    # pattern: <the public pattern it reproduces, and where it is from>
    # class: <short tag of the real-world class>
    # expect: pass | fail
    # expect-fail: <check id>, <check id>      (only, and always, with `expect: fail`)
    # why: <one line: why this verdict is the right one>

`expect-fail` lists exactly the checks a correct grader FAILS; a check reported as "skipped" (the result
format's per-check status) is not a failure.
"""
from __future__ import annotations

import functools
import os
import re
import zlib
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from grader.core.course import load_course
from grader.host.claims import contradictions

CORPUS = Path(__file__).resolve().parent
FIELDS = ("pattern", "class", "expect", "expect-fail", "why")
REQUIRED = ("pattern", "class", "expect", "why")
HEADER_LINE = re.compile(r"^#\s*([a-z-]+):\s*(.*?)\s*$")
CHECK_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@functools.cache
def disk_course():
    """The course on disk, read once for this module (every file's header names one of its exercises)."""
    return load_course()


class HeaderError(ValueError):
    pass


@dataclass(frozen=True)
class CorpusFile:
    path: Path
    exercise: str
    pattern: str
    klass: str
    expect: str
    expect_fail: frozenset[str]
    why: str
    code: str


def corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.glob("*/*/*.py"))


def corpus_id(path: Path) -> str:
    """<lesson>/<exercise>/<name>: the exercise id is the first two parts."""
    return path.relative_to(CORPUS).with_suffix("").as_posix()


def parse(path: Path, course=None, root: Path = CORPUS) -> CorpusFile:
    """Read and validate a corpus file's header; HeaderError says what is wrong and where."""
    course = course or disk_course()
    where = path.relative_to(root).as_posix()
    exercise_id = path.parent.relative_to(root).as_posix()
    if exercise_id not in course.exercises:
        raise HeaderError(f"{where}: folder '{exercise_id}' is not an exercise of the course "
                          f"(known: {', '.join(sorted(course.exercises))})")
    exercise = course.exercises[exercise_id]
    code = path.read_text(encoding="utf-8")
    fields: dict[str, str] = {}
    for number, line in enumerate(code.splitlines(), 1):
        if not line.startswith("#"):
            break  # the header is the file's leading comment lines
        match = HEADER_LINE.match(line)
        if not match:
            raise HeaderError(f"{where}:{number}: not a header line '# <field>: <value>': {line!r}")
        key, value = match.groups()
        if key not in FIELDS:
            raise HeaderError(f"{where}:{number}: unknown header field '{key}' (fields: {', '.join(FIELDS)})")
        if key in fields:
            raise HeaderError(f"{where}:{number}: header field '{key}' given twice")
        if not value:
            raise HeaderError(f"{where}:{number}: header field '{key}' is empty")
        fields[key] = value
    missing = [key for key in REQUIRED if key not in fields]
    if missing:
        raise HeaderError(f"{where}: header lacks {', '.join(missing)} (it must start with "
                          "'# pattern:', '# class:', '# expect:', ['# expect-fail:'], '# why:' lines)")
    expect = fields["expect"]
    if expect not in ("pass", "fail"):
        raise HeaderError(f"{where}: 'expect' must be 'pass' or 'fail', not '{expect}'")
    if expect == "pass" and "expect-fail" in fields:
        raise HeaderError(f"{where}: 'expect-fail' goes only with 'expect: fail'")
    if expect == "fail" and "expect-fail" not in fields:
        raise HeaderError(f"{where}: 'expect: fail' needs '# expect-fail: <check id>, ...'")
    ids = [part.strip() for part in fields.get("expect-fail", "").split(",") if part.strip()]
    if expect == "fail" and not ids:
        raise HeaderError(f"{where}: 'expect-fail' names no check")
    known = {check.id for check in exercise.checks}
    unknown = sorted(i for i in ids if i not in known)
    if unknown:
        raise HeaderError(f"{where}: expect-fail names checks that {exercise_id} does not have: "
                          f"{', '.join(unknown)} (its checks: {', '.join(sorted(known))})")
    if len(set(ids)) != len(ids):
        raise HeaderError(f"{where}: expect-fail names a check twice")
    if not CHECK_ID.match(fields["class"]):
        raise HeaderError(f"{where}: 'class' must be a lower-case-with-dashes tag, not '{fields['class']}'")
    return CorpusFile(path, exercise_id, fields["pattern"], fields["class"], expect, frozenset(ids),
                      fields["why"], code)


def failed_ids(result: dict) -> set[str]:
    """Checks that failed; one reported as "skipped" (because of an earlier failure) is not a failure."""
    return {c["id"] for c in result["checks"]
            if c.get("status", "failed" if not c["passed"] else "passed") == "failed"}


def describe(result: dict) -> str:
    lines = [f"status {result['status']}" + (f": {result['error']}" if result.get("error") else "")]
    for check in result["checks"]:
        status = check.get("status", "failed" if not check["passed"] else "passed")
        if status != "passed":
            lines.append(f"  {status.upper():7} {check['id']}: {check.get('message') or ''}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def corpus_sandbox(warm_sandbox):
    return warm_sandbox("local")


def test_every_exercise_has_corpus_files():
    covered = {path.parent.relative_to(CORPUS).as_posix() for path in corpus_files()}
    assert set(disk_course().exercises) <= covered, "exercises without a corpus file"


GOOD_HEADER = """# pattern: somewhere
# class: some-class
# expect: fail
# expect-fail: runs, matches-reference
# why: because
import torch
"""


@pytest.mark.parametrize("header, complaint", [
    (GOOD_HEADER.replace("# class: some-class\n", ""), "header lacks class"),
    (GOOD_HEADER.replace("expect: fail", "expect: maybe"), "'expect' must be 'pass' or 'fail'"),
    (GOOD_HEADER.replace("runs, matches-reference", "runs, no-such-check"), "no-such-check"),
    (GOOD_HEADER.replace("# expect-fail: runs, matches-reference\n", ""), "needs '# expect-fail:"),
    (GOOD_HEADER.replace("expect: fail", "expect: pass"), "goes only with 'expect: fail'"),
    (GOOD_HEADER.replace("# why: because", "# why because"), "not a header line"),
    (GOOD_HEADER.replace("# why: because", "# reason: because"), "unknown header field 'reason'"),
])
def test_malformed_headers_are_named(tmp_path, header, complaint):
    folder = tmp_path / "mixed-precision" / "amp-step"
    folder.mkdir(parents=True)
    (folder / "case.py").write_text(header)
    with pytest.raises(HeaderError, match=re.escape(complaint)):
        parse(folder / "case.py", root=tmp_path)


def test_a_well_formed_header_parses(tmp_path):
    folder = tmp_path / "mixed-precision" / "amp-step"
    folder.mkdir(parents=True)
    (folder / "case.py").write_text(GOOD_HEADER)
    entry = parse(folder / "case.py", root=tmp_path)
    assert (entry.exercise, entry.expect, entry.expect_fail) == (
        "mixed-precision/amp-step", "fail", frozenset({"runs", "matches-reference"}))


def corpus_seed(path: Path) -> int | None:
    """A seed fixed per file, so CI's verdicts do not depend on the draw (random draws found real seed-dependent
    verdicts, e.g. test_a_loss_moved_by_an_earlier_skipped_step_is_not_blamed; DLA_CORPUS_SEED=random redraws)."""
    return None if os.environ.get("DLA_CORPUS_SEED") == "random" else zlib.crc32(corpus_id(path).encode()) % 2**31 + 1


def timed(exercise_id: str) -> bool:
    """Exercises with a `faster` check: their gradings time two processes against each other, so they run alone."""
    return any(check.id == "faster" for check in disk_course().exercises[exercise_id].checks)


@pytest.fixture(scope="module")
def corpus_results(request, corpus_sandbox) -> Iterator[dict[Path, Future]]:
    """Every selected corpus file graded once, two at a time on the warm pool of 2 (the gradings are
    single-threaded, and this machine has 2 cores), the files of timed exercises one at a time after them;
    each test then holds its own file's result to its header (`.result()` raises what its grading raised).
    A file whose header does not parse is left out here: its test says why."""
    from grader.host.grading import run_submission

    entries = []
    for item in request.session.items:
        path = item.callspec.params.get("path") if hasattr(item, "callspec") else None
        if item.originalname == "test_corpus_file" and path is not None:
            try:
                entries.append((path, parse(path)))
            except HeaderError:
                pass

    def grade(path: Path, entry: CorpusFile) -> dict:
        return run_submission(entry.exercise, entry.code, sandbox=corpus_sandbox, seed=corpus_seed(path))

    with ThreadPoolExecutor(max_workers=2) as together, ThreadPoolExecutor(max_workers=1) as alone:
        untimed = {path: together.submit(grade, path, entry) for path, entry in entries if not timed(entry.exercise)}
        wait(untimed.values())
        one_by_one = {path: alone.submit(grade, path, entry) for path, entry in entries if timed(entry.exercise)}
        yield {**untimed, **one_by_one}


@pytest.mark.slow
@pytest.mark.parametrize("path", corpus_files(), ids=corpus_id)
def test_corpus_file(path, corpus_results):
    try:
        entry = parse(path)
    except HeaderError as exc:
        pytest.fail(f"malformed corpus header: {exc}", pytrace=False)
    result = corpus_results[path].result()
    assert result["status"] != "infra-error", f"the grader failed: {result.get('error')}"
    false_claims = contradictions(result, disk_course().exercises[entry.exercise].checks)
    assert not false_claims, f"{entry.klass}: messages contradict the evidence: {false_claims}\n{describe(result)}"
    failed = failed_ids(result)
    if entry.expect == "pass":
        assert result["passed"] is True and not failed, (
            f"{entry.klass}: expected to pass ({entry.why})\ngrader says:\n{describe(result)}")
    else:
        assert failed == set(entry.expect_fail), (
            f"{entry.klass}: expected exactly {sorted(entry.expect_fail)} to fail ({entry.why})\n"
            f"failed: {sorted(failed)}; missing: {sorted(entry.expect_fail - failed)}; "
            f"extra: {sorted(failed - entry.expect_fail)}\ngrader says:\n{describe(result)}")


@pytest.mark.slow
def test_a_loss_moved_by_an_earlier_skipped_step_is_not_blamed(corpus_sandbox):
    """With this seed the loss outside autocast overflows and skips call 1's step, and by call 3 the returned
    loss is 1.2% from a correct run's (1.479 against 1.462): the earlier update's fault, so `runs` is skipped
    as explained, not failed (CI met such a seed once in its random draws)."""
    from grader.host.grading import run_submission

    entry = parse(CORPUS / "mixed-precision" / "amp-step" / "swin_loss_outside_autocast.py")
    result = run_submission(entry.exercise, entry.code, sandbox=corpus_sandbox, seed=1063254276)
    runs = next(c for c in result["checks"] if c["id"] == "runs")
    assert failed_ids(result) == {"autocast-scope"}, describe(result)
    assert (runs["status"], runs["because"]) == ("skipped", "autocast-scope")
