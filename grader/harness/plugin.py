"""The pytest plugin that runs an exercise's checks in the grading process.

It hands each test the observations the probe sent back from the learner's process (`observed`, whose
`events` are the grading side's own copy of the live stream), what the grading side measured itself
(`outside`) and the run's facts (`run`), and turns pytest's reports into one result per check id.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from grader.checks.grading import checking
from grader.checks.grading.checking import CheckFailed


@dataclass
class CheckRun:
    observed: dict[str, Any]
    run: dict[str, Any]
    outside: dict[str, Any] = field(default_factory=dict)  # measured by the grading side (referee.py)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    trace: dict[str, Any] | None = None  # what the learner's code did, call by call (grader/core/display.py)
    figures: list[dict[str, Any]] = field(default_factory=list)


_current: CheckRun | None = None


def activate(check_run: CheckRun) -> None:
    global _current
    _current = check_run
    checking.show_to(add_display)  # the checks' show() lands in this run


def add_display(trace: dict[str, Any] | None, figure: dict[str, Any] | None) -> None:
    assert _current is not None
    if trace is not None:
        _current.trace = trace
    if figure is not None:
        _current.figures.append(figure)


@pytest.fixture(scope="session")
def observed() -> dict[str, Any]:
    assert _current is not None
    return _current.observed


@pytest.fixture(scope="session")
def outside() -> dict[str, Any]:
    """What the grading side measured itself while the learner's code ran (its referee, its meters)."""
    assert _current is not None
    return _current.outside


@pytest.fixture(scope="session")
def run() -> dict[str, Any]:
    """seed, device ('cuda' or 'cpu'), emulated (bool) and the exercise's entry name."""
    assert _current is not None
    return _current.run


def _check_id(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("check")
    return marker.args[0] if marker and marker.args else None


def _is_figure(item: pytest.Item) -> bool:
    return item.get_closest_marker("figure") is not None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "check(id): the exercise check this test belongs to")
    config.addinivalue_line("markers", "figure: a test that only adds a timeline or figures to the verdict")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    assert _current is not None
    for item in items:
        if _check_id(item) is None and not _is_figure(item):
            _current.problems.append(f"{item.nodeid}: test has no @check('<id>') (or @figure) marker")


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    assert _current is not None
    if _is_figure(item) and call.excinfo is not None and not isinstance(call.excinfo.value, pytest.skip.Exception):
        # A figure that cannot be drawn is the author's problem; the verdict goes on without it.
        _current.problems.append(f"{item.nodeid} ({call.when}): {type(call.excinfo.value).__name__}: "
                                 f"{call.excinfo.value}")
        return
    check_id = _check_id(item)
    if check_id is None or call.when == "teardown" and call.excinfo is None:
        return
    entry = _current.results.setdefault(check_id, {"passed": True, "message": "", "line": None})
    if call.excinfo is None or not entry["passed"]:
        return
    exc = call.excinfo.value
    entry["passed"] = False
    if isinstance(exc, CheckFailed):
        entry["message"], entry["line"] = exc.message, exc.line
        if exc.event is not None:
            entry["event"] = exc.event
        if exc.hint is not None:
            entry["hint"] = exc.hint
        if exc.explained_by is not None:
            entry["explained_by"] = exc.explained_by
    elif isinstance(exc, AssertionError):
        entry["message"] = str(exc).split("\nassert ")[0].strip() or "an assertion in the check failed"
    elif isinstance(exc, pytest.skip.Exception):
        entry["passed"], entry["message"] = True, ""
    else:
        # A bug in the check, or an observation it did not expect: the problem keeps the detail for the instructor.
        entry["message"] = "The check could not evaluate your code's behaviour."
        _current.problems.append(f"{item.nodeid} ({call.when}): {type(exc).__name__}: {exc}")
