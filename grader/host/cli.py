"""The `grader` command: one click group, one small function per verb; the work is in library code
that the web app calls too.

Exit codes of `grader check`: 0 every check passed, 1 a check failed (or the code raised, timed out,
was killed), 2 bad usage, 3 the grading infrastructure failed. `grader run` (the web page's Run): 0 the
function returned, 1 it did not, 2 and 3 the same.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from grader.core.course import Course, CourseError, Exercise, load_course

if TYPE_CHECKING:  # the commands import their modules when run: `grader --help` stays fast
    from grader.core.result import Result
    from grader.host.validate import Case

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3


def _course() -> Course:
    try:
        return load_course()
    except CourseError as exc:  # the grader's own content is broken: an infrastructure failure
        click.echo(f"Error: the course files are invalid: {exc}", err=True)
        sys.exit(EXIT_INFRA)


def _exercise(course: Course, ref: str) -> Exercise:
    try:
        return course.find_exercise(ref)
    except KeyError as exc:
        raise click.UsageError(exc.args[0]) from None
    except CourseError as exc:
        raise click.UsageError(str(exc)) from None


def _print_report(result: Result) -> None:
    marks = {"passed": click.style("PASS", fg="green", bold=True), "failed": click.style("FAIL", fg="red", bold=True),
             "skipped": click.style("SKIP", fg="yellow", bold=True)}
    click.echo(f"{click.style(result['title'], bold=True)}  ({result['exercise']})")
    where = f"device: {result['device']}   " if result.get("device") else ""
    click.echo(f"{where}sandbox: {result['sandbox']}   time: {result['duration_s']:.2f} s")
    error = result.get("error")
    if error:  # the code did not load or run: one message, no per-check lines
        line = f" (line {error['line']})" if error.get("line") and "line" not in error["message"] else ""
        click.echo(click.style(f"\n{error['message']}{line}", fg="red"))
    else:
        click.echo()
        for check in result["checks"]:
            click.echo(f"  {marks[check['status']]}  {check['title']}  [{check['id']}]")
            if check["status"] != "passed":
                line = f" (line {check['line']})" if check["line"] else ""
                click.echo(f"        {check['message']}{line if line and 'line' not in check['message'] else ''}")
            if check["status"] == "failed" and check["hint"]:
                click.echo(click.style(f"        hint: {check['hint']}", dim=True))
    passed = sum(c["status"] == "passed" for c in result["checks"])
    skipped = sum(c["status"] == "skipped" for c in result["checks"])
    click.echo()
    summary = f"{passed}/{len(result['checks'])} checks passed (score {result['score']:.2f})"
    if skipped and not error:
        summary += f"; {skipped} not judged because of an earlier failure"
    click.echo(click.style(summary, fg="green" if result["passed"] else "red", bold=True))
    if result.get("trace") or result.get("figures"):
        from grader.core.display import as_text

        click.echo()
        click.echo(as_text(result.get("trace"), result.get("figures") or []))
    # The grader's own notes (the sandbox) too, here where the person grading is the one who ran it;
    # the emulation note is left out where the exercise's own note for CPU grading already says it.
    grader_notes = [n for n in result.get("grader_notes", []) if not (result.get("notes") and n.startswith("No GPU"))]
    for note in [*result.get("notes", []), *grader_notes]:
        click.echo(click.style(f"note: {note}", dim=True))
    if result.get("output"):
        click.echo(click.style("\nyour code printed:", dim=True))
        click.echo(result["output"].rstrip()[:2000])


@click.group()
def main() -> None:
    """Grade deep-learning exercises by what the code does."""


@main.command("list")
def list_exercises() -> None:
    """List the exercises with their titles."""
    course = _course()
    for lesson in course.lessons:
        click.echo(f"{lesson.number}. {lesson.title}")
        for exercise in lesson.exercises:
            click.echo(f"   {exercise.id:<40} {exercise.title}")


_EXERCISE = click.argument("exercise")
_FILE = click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a report.")
_SANDBOX = click.option("--sandbox", type=click.Choice(["auto", "docker", "local", "unconfined"]), default="auto",
                        show_default=True,
                        help="unconfined: your own code only, nothing hidden or limited but rlimits.")


def _code_of(file: Path) -> str:
    from grader.host.grading import SubmissionError, decode_submission

    try:
        return decode_submission(file.read_bytes())
    except FileNotFoundError:
        raise click.UsageError(f"no such file: {file}") from None
    except OSError as exc:
        raise click.UsageError(f"cannot read {file}: {exc.strerror}") from None
    except SubmissionError as exc:
        raise click.UsageError(f"{file}: {exc}") from None


@main.command()
@_EXERCISE
@_FILE
@_JSON
@_SANDBOX
@click.option("--seed", type=int, help="Reuse the scenario seed of an earlier run.")
def check(exercise: str, file: Path, as_json: bool, sandbox: str, seed: int | None) -> None:
    """Grade FILE against EXERCISE (an id like mixed-precision/amp-step, or an exercise folder)."""
    from grader.host.grading import SubmissionError, run_submission

    target = _exercise(_course(), exercise)
    code = _code_of(file)
    try:
        result = run_submission(target, code, sandbox=sandbox, seed=seed)
    except SubmissionError as exc:
        raise click.UsageError(f"{file}: {exc}") from None
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        _print_report(result)
    if result["status"] == "infra-error":
        if "sandbox is refused" in (result["error"] or {}).get("message", ""):
            click.echo("hint: to grade your own code on your own machine without confinement, add "
                       "--sandbox unconfined", err=True)
        sys.exit(EXIT_INFRA)
    sys.exit(EXIT_PASSED if result["passed"] else EXIT_FAILED)


@main.command("new")
@click.argument("exercise_id", metavar="LESSON/EXERCISE")
@click.option("--from", "source", metavar="EXISTING",
              help="Copy this exercise (an id or a folder) instead of the template.")
def new(exercise_id: str, source: str | None) -> None:
    """Start exercise LESSON/EXERCISE: a folder that `grader validate` passes at once (docs/authoring.md)."""
    from grader.host.scaffold import ScaffoldError, new_exercise

    course = _course()
    try:
        origin = course.find_exercise(source) if source else None
        made = new_exercise(course, exercise_id, origin)
    except (ScaffoldError, KeyError, CourseError) as exc:
        click.echo(f"Error: {exc.args[0] if isinstance(exc, KeyError) else exc}", err=True)
        sys.exit(EXIT_FAILED)
    where = made.path.relative_to(Path.cwd()) if made.path.is_relative_to(Path.cwd()) else made.path
    click.echo(f"Created {where}/ from {'the template' if source is None else source}:")
    for path in sorted(p for p in made.path.rglob("*") if p.is_file()):
        click.echo(f"  {path.relative_to(made.path)}")
    click.echo(f"\nCheck it: grader validate {where}")
    click.echo(f"Learners see it once {where.parent / 'lesson.yaml'} lists it (not added for you: "
               f"put it where it belongs among the steps):\n{made.lesson_line}")


@main.command("run")
@_EXERCISE
@_FILE
@_JSON
@_SANDBOX
def run_command(exercise: str, file: Path, as_json: bool, sandbox: str) -> None:
    """Call FILE's function once on EXERCISE's example (example.py) and show what it printed and returned, or
    the error and its line. No checks, no verdict. Exit 0 when it returned, 1 when it did not, 3 infra."""
    from grader.host.grading import run_example

    run = run_example(_exercise(_course(), exercise), _code_of(file), sandbox=sandbox)
    if as_json:
        click.echo(json.dumps(run, indent=2))
    else:
        click.echo(f"{run['exercise']}   device: {run['device'] or '-'}   sandbox: {run['sandbox']}   "
                   f"time: {run['duration_s']:.2f} s")
        click.echo("printed:" + ("" if run["output"] else " (nothing)"))
        for line in run["output"].splitlines():
            click.echo(f"  {line}")
        if run["error"]:
            click.echo(run["error"]["message"])
        if run["returned"] is not None:
            click.echo(f"returned: {run['returned']}" + (" (truncated)" if run["returned_truncated"] else ""))
        for note in run["notes"]:
            click.echo(f"note: {note}")
    sys.exit(EXIT_PASSED if run["status"] == "ran" else EXIT_INFRA if run["status"] == "infra-error" else EXIT_FAILED)


@main.command()
@click.argument("exercises", nargs=-1)
@click.option("--sandbox", type=click.Choice(["auto", "docker", "local", "unconfined"]), default="local",
              show_default=True)
@click.option("--seeds", type=click.IntRange(1, 1000), default=1, show_default=True,
              help="Grade each file this many times, each with a random scenario seed.")
def validate(exercises: tuple[str, ...], sandbox: str, seeds: int) -> None:
    """Check that each solution passes and each mistake fails exactly what it declares."""
    from grader.host.validate import validate_exercise, validation_sandbox

    course = _course()
    targets = [_exercise(course, ref) for ref in exercises] or list(course.exercises.values())
    # A warm pool serves one course folder: one per folder the targets live in (an exercise given as a folder
    # outside the course would otherwise be graded by a cold process per case, beside an unused pool).
    by_root: dict[Path, list[Exercise]] = {}
    for exercise in targets:
        by_root.setdefault(exercise.course_root, []).append(exercise)
    bad = 0
    for root, group in by_root.items():
        with validation_sandbox(sandbox, root) as grading:
            for exercise in group:
                click.echo(click.style(exercise.id, bold=True))
                try:
                    cases = validate_exercise(exercise, sandbox=grading, seeds=seeds)
                except CourseError as exc:
                    click.echo(click.style(f"  invalid: {exc}", fg="red"))
                    bad += 1
                    continue
                bad += _report_cases(exercise, cases)
    click.echo()
    if bad:
        click.echo(click.style(f"{bad} problem(s)", fg="red", bold=True))
        sys.exit(1)
    click.echo(click.style(f"{len(targets)} exercise(s) valid", fg="green", bold=True))


def _report_cases(exercise: Exercise, cases: list[Case]) -> int:
    """Print one line per file, or one per wrong grading with the seed that replays it; returns how many
    gradings are wrong."""
    by_file: dict[Path, list[Case]] = {}
    for case in cases:
        by_file.setdefault(case.path, []).append(case)
    bad = 0
    for path, gradings in by_file.items():
        name = path.relative_to(exercise.path)
        wrong = [case for case in gradings if not case.ok]
        for case in wrong:
            click.echo(f"  {click.style('WRONG', fg='red', bold=True)} {name}: {case.report()}")
        bad += len(wrong)
        if wrong:
            continue
        case = next((c for c in gradings if not c.passed_may_pass), gradings[0])  # as declared, where one is
        what = case.report() + (f" ({len(gradings)} seeds)" if len(gradings) > 1 else "")
        passing = [c for c in gradings if c.passed_may_pass]
        if len(gradings) > 1 and passing:
            ids = ", ".join(sorted(frozenset().union(*(c.passed_may_pass for c in passing))))
            what += f"; passed {ids} with {len(passing)} of them (may pass)"
        if case.expected_fail:  # the outside-evidence column (docs/threat-model.md)
            caught = all(c.caught_outside for c in gradings)
            what += "   [outside: caught]" if caught else "   [outside: not caught]"
        click.echo(f"  {click.style('ok', fg='green')}    {name}: {what}")
    return bad


if __name__ == "__main__":
    main()
