"""Run each exercise's checks on what a learner's process could send instead of its real observations
(tests/grader/test_observation_types.py runs this module in a fresh interpreter: `python -m
tests.grader.mutated_observations [exercise ...]`).

For each exercise, one real grading of a submission (unconfined, in this process) gives the observations
the probe sent, the grading side's events and its referee's measures. The exercise's checks then run again
through the grading process's own path (grader.harness.grade._run_checks) on copies of those observations
with values of the wrong type put in (MUTATIONS), and each run's raw verdict goes the way a real one goes:
`bounded()`, encoded, parsed as the host parses a grading process's line (a verdict it refuses becomes
"the grader failed", an infra-error), then built into the result the learner sees. One JSON line per run
on stdout. No learner code runs again: only the checks do.
"""
from __future__ import annotations

import copy
import json
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator

# The submission whose observations are mutated, per exercise: a mistake, so that the checks reach their
# failing paths (where lines, counts and names go into the verdict), and a quick one. An exercise not named
# here gets its first mistake (`submission_of`).
SUBMISSIONS = {
    "gpu-memory/fit-the-budget": "mistakes/forgets-zero-grad.py",
    "gradient-accumulation/accumulate-amp": "mistakes/boundary-off-by-one.py",
    "gradient-accumulation/ddp-accumulate": "mistakes/never-no-sync.py",
    "gradient-accumulation/ddp-clip": "mistakes/clips-before-unscale.py",
    "gradient-accumulation/token-weighted": "mistakes/counts-padding.py",
    "mixed-precision/amp-clip-step": "mistakes/clips-before-unscale.py",
    "mixed-precision/amp-step": "mistakes/raw_backward.py",
    "mixed-precision/bf16-train": "mistakes/no-autocast.py",
    "mixed-precision/fix-underflow": "mistakes/no_scaler.py",
    "mixed-precision/fused-skip": "mistakes/step_post_hook.py",
    "mixed-precision/skipped-steps": "mistakes/advances_every_batch.py",
    "profiling/feed-the-model": "mistakes/drops-the-last-batch.py",
    "profiling/fix-the-bottleneck": "mistakes/names-the-wrong-region.py",
    "profiling/graph-breaks": "mistakes/prints-the-tensor.py",
}

# Values of the wrong type: text for a number, a list for text, None, an integer past any line or count, a
# nested mapping, NaN, a negative number, empty text. All are what a frame may carry (grader/harness/frame.py).
WRONG: tuple[Any, ...] = ("7", ["x"], None, 2**62, {"a": {"b": [1]}}, float("nan"), -3, "")
# What an event may still carry past the channel's type check (grader.core.events.check_event): right types,
# wrong values.
EVENT_WRONG = {int: (0, -3, 2**62), float: (float("nan"), float("inf"), -1e308), str: ("", "x" * 300)}
# The keys only the grading side fills (grade.verdict_for): never the learner's frame.
GRADING_SIDE = ("events", "runs")


def submission_of(exercise: Any) -> Path:
    named = SUBMISSIONS.get(exercise.id)
    mistakes = sorted((exercise.path / "mistakes").glob("*.py"))
    return exercise.path / named if named else mistakes[0] if mistakes else exercise.path / "solution.py"


def _leaves(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, value) of every leaf: anything that is not a mapping or a list."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, (*path, i))
    else:
        yield path, value


def _put(tree: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


def _frames(observed: dict[str, Any]) -> list[dict[str, Any]]:
    """The learner-sent mappings in `observed`: its own fields and each other run's (the grading side's keys
    left out)."""
    runs = observed.get("runs") or {}
    return [observed, *(run for run in runs.values() if isinstance(run, dict))]


Mutated = tuple[dict[str, Any], int]  # the mutated copy, how many values it changed


def _mutate_frames(observed: dict[str, Any], change: Callable[[int, tuple, Any], Any]) -> Mutated:
    out = copy.deepcopy(observed)
    number, changed = 0, 0
    for frame in _frames(out):
        for key in [k for k in frame if k not in GRADING_SIDE]:
            for path, value in list(_leaves(frame[key], (key,))):
                new = change(number, path, value)
                number += 1
                if new is not value:
                    _put(frame, path, new)
                    changed += 1
    return out, changed


def lines_as_text(observed: dict[str, Any]) -> Mutated:
    """Every `line` the probe sent (a break's, an advance's, an error's) as text: the reported attack."""
    return _mutate_frames(observed, lambda n, path, value: str(value) if path[-1] == "line" and value else value)


def sparse(offset: int) -> Callable[[dict[str, Any]], Mutated]:
    """Every third leaf (from `offset`) replaced by one of WRONG, in turn; the events' values within their
    types (EVENT_WRONG) where the channel would let them through."""
    def mutate(observed: dict[str, Any]) -> Mutated:
        from grader.core.events import MalformedEvent, check_event

        out, changed = _mutate_frames(observed, lambda n, path, value: WRONG[(n // 3 + offset) % len(WRONG)]
                             if n % 3 == offset else value)
        number = 0
        for events in [out.get("events") or [], *(run.get("events") or [] for run in _frames(out)[1:])]:
            for event in events:
                for name, value in list(event.items()):
                    if name in ("event", "index", "label") or type(value) not in EVENT_WRONG:
                        continue
                    number += 1
                    if number % 3 != offset:
                        continue
                    choices = EVENT_WRONG[type(value)]
                    event[name] = choices[number // 3 % len(choices)]
                    try:
                        check_event(event)
                        changed += 1
                    except MalformedEvent:
                        event[name] = value
        return out, changed
    return mutate


def mutations(number: int) -> dict[str, Callable[[dict[str, Any]], Mutated]]:
    """The mutations the `number`-th exercise's observations get: its lines as text, then every third leaf
    (which third turns with the exercise)."""
    return {"lines as text": lines_as_text, f"every third leaf from {number % 3}": sparse(number % 3)}


def _forget_exercise_modules(checks_dir: Path) -> None:
    """The modules of another exercise's checks folder (`scenario`, `probe`, ...), so this one's load."""
    names = {path.stem for path in checks_dir.parent.parent.parent.glob("*/*/checks/*.py")} | {"exercise_referee"}
    for name in [n for n in sys.modules if n.split(".")[0] in names]:
        del sys.modules[name]
    sys.path[:] = [p for p in sys.path if not p.endswith("/checks")]


def judged(exercise: Any, check_run: Any) -> Any:
    """The raw verdict of `check_run` as grade.verdict_for makes one after its checks ran, bounded."""
    from grader.core.display import focus
    from grader.core.protocol import RawVerdict, Status
    from grader.core.result import shown_checks

    verdict = RawVerdict(status=Status.FAILED, checks=check_run.results, problems=list(check_run.problems))
    marked = [check.get("event") for check in shown_checks(exercise, verdict) if check["status"] == "failed"]
    verdict.trace, verdict.figures = focus(check_run.trace, marked), check_run.figures
    declared = {c.id for c in exercise.checks}
    if declared <= set(check_run.results) and all(r["passed"] for r in check_run.results.values()):
        verdict.status = Status.PASSED
    return verdict.bounded()


def report_of(exercise: Any, mutation: str, verdict: Any) -> dict[str, Any]:
    """What became of a bounded raw verdict on its way to the learner: read from its line as the host reads
    a grading process's (a verdict it refuses is "the grader failed", an infra-error), then built into the
    result the learner sees."""
    from grader.core.protocol import ProtocolError, parse_output_line
    from grader.core.result import build_result, validate_result

    report: dict[str, Any] = {"exercise": exercise.id, "mutation": mutation}
    try:
        _, parsed = parse_output_line(verdict.encode())
        result = build_result(exercise, parsed, "unconfined", 0.0)
        validate_result(result)
    except ProtocolError as exc:
        return {**report, "status": "infra-error", "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - the grading process or the host would crash: said, not raised
        return {**report, "status": "crash", "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()[-2000:]}
    return {**report, "status": result["status"], "ran": sorted(parsed.checks), "problems": result.get("problems", []),
            "checks": {c["id"]: {key: c[key] for key in ("status", "message", "line")} for c in result["checks"]}}


def main(ids: list[str]) -> None:
    from grader.core.course import load_course
    from grader.harness import grade
    from grader.harness.frame import FrameError, check_value
    from sandbox.jail import Confinement

    grade.warm_up()
    # This process grades every exercise in turn: the grading process's own limits (tested in
    # tests/grader/test_grading_process.py) are set once per process and cannot be raised again.
    grade._limit_self = lambda exercise: None
    exercises = load_course().exercises
    real_checks = grade._run_checks
    for number, exercise_id in enumerate(ids or list(exercises)):
        exercise = exercises[exercise_id]
        _forget_exercise_modules(exercise.checks_dir)
        reports: list[dict[str, Any]] = []
        last: list[str] = []

        def mutated_checks(folder: Path, observed: dict[str, Any], facts: dict[str, Any], outside: dict[str, Any],
                           exercise: Any = exercise, reports: list = reports, last: list = last,
                           number: int = number) -> Any:
            """Every mutation's checks but the last judged here; the last one's returned to verdict_for, which
            makes its verdict as for any grading."""
            check_run = None
            for name, mutate in mutations(number).items():
                mutated, changed = mutate(observed)
                if not changed:
                    continue  # nothing of that kind in this exercise's observations
                try:
                    check_value({k: v for k, v in mutated.items() if k not in GRADING_SIDE})
                except FrameError:
                    continue  # the frame itself would be refused: the checks would never see it
                if check_run is not None:
                    reports.append(report_of(exercise, last[-1], judged(exercise, check_run)))
                check_run = real_checks(folder, mutated, facts, outside)
                last.append(name)
            return check_run if check_run is not None else real_checks(folder, observed, facts, outside)

        grade._run_checks = mutated_checks
        code = submission_of(exercise).read_text()
        try:
            verdict = grade.verdict_for(exercise, code, Confinement.NONE, seed=5)
        except Exception as exc:  # noqa: BLE001 - the grading process would crash: said, not raised
            reports.append({"exercise": exercise.id, "mutation": last[-1] if last else None, "status": "crash",
                            "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-2000:]})
        else:
            if last:
                reports.append(report_of(exercise, last[-1], verdict))
            else:
                reports.append({"exercise": exercise.id, "mutation": None, "status": "not judged",
                                "error": f"{verdict.status.value}: {verdict.error}"})
        for report in reports:
            print(json.dumps(report, default=str), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
