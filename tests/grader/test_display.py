"""The verdict's pictures (grader/display.py): the timeline of the learner's calls, which event it marks,
the figures' shape, and the 32 KB cap; and end to end, what `grader check` shows for a wrong step."""
from __future__ import annotations

import json

import jsonschema
import pytest

from grader.core.display import DISPLAY_CAP, as_text, bar_figure, capped, focus, line_figure, table_figure, timeline
from grader.core.jsonschemas import schema as result_schemas
from tests.support.paths import EXERCISES


def ev(index: int, kind: str, line: int | None = None, **fields) -> dict:
    return {"event": kind, "index": index, "line": line, **fields}


# Two calls of a train_step: the second runs backward on the raw loss, and its scaler.step raises.
EVENTS = [
    ev(0, "mark", label="call"),
    ev(1, "optimizer.zero_grad", 5),
    ev(2, "forward", 7, autocast=True, autocast_dtype="float16", output_dtype="float16"),
    ev(3, "loss", 7, autocast=True, autocast_dtype="float16", output_dtype="float32"),
    ev(4, "scaler.scale", 8),
    ev(5, "backward", 8, on="scaled", ratio=65536.0, autocast=False, autocast_dtype=None, grads_clear=True),
    ev(6, "scaler.step", 9, scale=65536.0),
    ev(7, "scaler.unscale_", None, internal=True),
    ev(8, "optimizer.step", None, via_scaler=True),
    ev(9, "scaler.update", 10, scale_before=65536.0, scale_after=65536.0),
    ev(10, "mark", label="call"),
    ev(11, "forward", 7, autocast=True, autocast_dtype="float16", output_dtype="float16"),
    ev(12, "loss", 7, autocast=True, autocast_dtype="float16", output_dtype="float32"),
    ev(13, "backward", 8, on="raw", ratio=1.0, autocast=False, autocast_dtype=None, grads_clear=False),
    ev(14, "scaler.step", 9, scale=65536.0),
]


def trace_schema() -> dict:
    defs = result_schemas("result")["$defs"]
    return {**defs["trace"], "$defs": defs}


def test_timeline_rows_say_what_each_call_did() -> None:
    trace = timeline(EVENTS, group_by="call", group_label="call", title="What your step did", caption="c")
    jsonschema.validate(trace, trace_schema())
    assert trace["groups"] == 2
    first = [row for row in trace["rows"] if row["group"] == 1]
    assert [row["call"] for row in first] == ["optimizer.zero_grad()", "model(x)", "loss_fn(out, y)",
                                              "scaler.scale(loss)", "backward()", "scaler.step(optimizer)",
                                              "scaler.update()"]  # the scaler's own unscale_ and step folded in
    backward = next(row for row in first if row["call"] == "backward()")
    assert (backward["backward"], backward["grads"], backward["autocast"]) == ("scaled", "clear", False)
    assert next(row for row in first if row["event"] == 6)["step"] == "taken"
    assert next(row for row in first if row["event"] == 9)["scale"] == 65536.0
    assert next(row for row in trace["rows"] if row["event"] == 14)["step"] == "did not complete (it raised)"


def test_a_step_skipped_for_inf_gradients_reads_skipped() -> None:
    events = [ev(0, "backward", 3, on="scaled", ratio=1.0, autocast=False, autocast_dtype=None, grads_clear=True),
              ev(1, "scaler.step", 4, scale=65536.0), ev(2, "scaler.update", 5, scale_before=65536.0,
                                                        scale_after=32768.0)]
    rows = timeline(events, group_by="update", group_label="step", title="t", caption="c")["rows"]
    assert rows[1]["step"] == "skipped (inf/NaN gradients)" and rows[2]["scale"] == 32768.0


def test_focus_keeps_the_group_of_the_first_marked_event_and_marks_only_it() -> None:
    trace = timeline(EVENTS, group_by="call", group_label="call", title="t", caption="c")
    focused = focus(trace, [None, 13])
    assert focused["group"] == 2 and {row["group"] for row in focused["rows"]} == {2}
    assert [row["event"] for row in focused["rows"] if row["marked"]] == [13]
    passed = focus(trace, [])
    assert passed["group"] == 1 and not any(row["marked"] for row in passed["rows"])
    assert focus(trace, [999])["group"] == 1  # an event outside the trace marks nothing


def test_figures_have_labels_captions_and_alternatives_and_drop_what_cannot_be_drawn() -> None:
    defs = result_schemas("result")["$defs"]
    schema = {**defs["figure"], "$defs": defs}
    line = line_figure("loss", "Loss", "step", "loss (log)", "Look for a fall.", "Line chart of the loss.",
                       {"Yours": [(1, 1.0), (2, float("nan")), (3, 0.0), (4, 0.5)]}, log_y=True)
    assert line["series"][0]["points"] == [[1.0, 1.0], [4.0, 0.5]]  # NaN and (on a log scale) 0 left out
    many = line_figure("x", "t", "x", "y", "c", "a", {"s": [(i, float(i)) for i in range(1000)]})
    assert len(many["series"][0]["points"]) == 120 and many["series"][0]["points"][-1] == [999.0, 999.0]
    bars = bar_figure("memory", "Memory", "MB", "c", "a", [("Yours", 10.0, "yours"), ("Budget", 20.0, "limit")])
    table = table_figure("profile", "Profile", ["region", "ms"], [["preprocess", 12.5]], "c", "a", [0])
    for figure in (line, many, bars, table):
        jsonschema.validate(figure, schema)
        assert figure["title"] and figure["caption"] and figure["alt"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**bars, "bars": [{"label": "x", "value": 1, "role": "decoration"}]}, schema)


def test_cap_drops_figures_first_then_cuts_the_trace() -> None:
    trace = timeline(EVENTS, group_by="call", group_label="call", title="t", caption="c")
    big = [line_figure(f"f{i}", "t", "x", "y", "c", "a", {"s": [(j, j * 1.5) for j in range(120)]})
           for i in range(20)]
    kept_trace, kept, notes = capped(trace, big)
    assert len(json.dumps({"trace": kept_trace, "figures": kept})) <= DISPLAY_CAP
    assert kept_trace == trace and 0 < len(kept) < 20 and any("capped at 32 KB" in note for note in notes)
    huge = {**trace, "rows": trace["rows"] * 400}
    cut, _, notes = capped(huge, [])
    assert cut["truncated"] and len(json.dumps({"trace": cut, "figures": []})) <= DISPLAY_CAP


def test_text_form_marks_the_row() -> None:
    trace = focus(timeline(EVENTS, group_by="call", group_label="call", title="What your step did", caption="c"),
                  [13])
    text = as_text(trace, [bar_figure("m", "Memory", "MB", "c", "Bar chart: 10 MB.", [("Yours", 10, "yours")])])
    assert "What your step did (call 2 of 2):" in text
    assert "  > line   8  backward()" in text and "on raw, grads not clear" in text
    assert "Memory: Bar chart: 10 MB." in text


@pytest.mark.slow
def test_grader_check_shows_the_failing_checks_event_in_the_timeline(warm_sandbox) -> None:
    """End to end on the local sandbox (the session's warm pool): a raw backward's row is marked and belongs to
    the check that failed."""
    from grader.core.course import load_course
    from grader.host.grading import run_submission

    course = load_course()
    mistake = (EXERCISES / "mixed-precision/amp-step/mistakes/raw_backward.py").read_text()
    local = warm_sandbox("local")
    result = run_submission(course.exercises["mixed-precision/amp-step"], mistake, sandbox=local)
    failed = [c for c in result["checks"] if c["status"] == "failed"]
    assert [c["id"] for c in failed] == ["scaled-backward"]
    marked = [row for row in result["trace"]["rows"] if row["marked"]]
    assert len(marked) == 1 and marked[0]["event"] == failed[0]["event"] and marked[0]["call"] == "backward()"
    assert marked[0]["line"] == failed[0]["line"]
    solution = (EXERCISES / "mixed-precision/amp-step/solution.py").read_text()
    right = run_submission(course.exercises["mixed-precision/amp-step"], solution, sandbox=local)
    assert right["passed"] and right["trace"]["rows"] and not any(r["marked"] for r in right["trace"]["rows"])


@pytest.mark.slow
def test_a_figure_that_fails_is_the_authors_problem_not_a_check(tmp_path) -> None:
    """A @figure test that raises leaves the checks as they were and tells the author; one that draws adds
    its figure; a figure that breaks the schema is left out and said."""
    import shutil
    from pathlib import Path

    import grader
    from grader.core.course import load_exercise
    from grader.host.grading import run_submission

    folder = tmp_path / "lesson" / "scaffolded"
    shutil.copytree(Path(grader.__file__).parent / "host" / "templates" / "exercise", folder)
    (folder / "checks" / "test_pictures.py").write_text(
        "from grader.checks.grading.judging import bar_figure, figure, show\n\n\n"
        "@figure\ndef test_draws(observed):\n"
        "    show(figure=bar_figure('size', 'Size', 'MB', 'Look.', 'Bar chart.', [('Yours', 1.0, 'yours')]))\n\n\n"
        "@figure\ndef test_breaks(observed):\n    raise RuntimeError('a bug in a figure')\n\n\n"
        "@figure\ndef test_malformed(observed):\n    show(figure={'kind': 'pie', 'id': 'x'})\n")
    exercise = load_exercise(folder, "lesson/scaffolded")
    result = run_submission(exercise, (folder / "solution.py").read_text(), sandbox="local")
    assert result["passed"] and result["status"] == "passed"
    assert [f["id"] for f in result["figures"]] == ["size"]
    problems = "\n".join(result.get("problems", []))
    assert "a bug in a figure" in problems and "figure left out of the verdict" in problems
