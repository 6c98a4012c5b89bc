"""What a verdict shows besides words: a timeline of the learner's calls ("trace") and figures.

Both are built on the grading side by an exercise's own checks (`grader.checks.grading.judging.show`) from what
was recorded and measured, and travel in the result (grader/core/schemas/result.json, "trace" and "figures";
together at most DISPLAY_CAP bytes of JSON). The page draws them as SVG and tables (static/figures.js),
`grader check` prints them as text (`as_text`).

A trace is the AMP spies' events of one call of the learner's function (or one accumulation window), one
row per call the learner's code made: its line, what it called, whether autocast was on, the dtype it
produced, what backward ran on, whether the gradients were clear, whether a step was taken or skipped, the
scale after each update. A failing check names the event it is about (`fail(..., event=...)`); the trace
keeps the group (call, window) that holds the first such event, and the page marks that row and links it
to the check and to the editor line. Nothing else decides what is marked.

Figures are `line`, `bar` or `table`, each with a title, axis labels with units, a one-line caption saying
what to look for, and a text alternative.
"""
from __future__ import annotations

import json
import math
from typing import Any, Iterable

DISPLAY_CAP = 32 * 1024  # bytes of JSON for trace and figures together
MAX_POINTS = 120  # per line series: longer ones are thinned evenly (first and last kept)

# How each recorded kind reads in a timeline (kinds not listed are left out: marks, gradient copies).
CALLS = {
    "optimizer.zero_grad": "optimizer.zero_grad()",
    "forward": "model(x)",
    "loss": "loss_fn(out, y)",
    "scaler.scale": "scaler.scale(loss)",
    "backward": "backward()",
    "scaler.unscale_": "scaler.unscale_(optimizer)",
    "clip": "clip",
    "scaler.step": "scaler.step(optimizer)",
    "optimizer.step": "optimizer.step()",
    "scaler.update": "scaler.update()",
}


def _group_starts(events: list[dict[str, Any]], group_by: str) -> list[int]:
    """The group number (1-based) of each event: "call" splits at the probe's mark("call"); "update"
    starts a new group after each scaler.update() (or a direct optimizer.step() without a scaler)."""
    numbers, group, pending = [], 0 if group_by == "call" else 1, False
    for event in events:
        kind = event.get("event")
        if group_by == "call" and kind == "mark" and event.get("label") == "call":
            group += 1
        elif group_by == "update" and pending and kind in CALLS:
            group, pending = group + 1, False
        numbers.append(max(group, 1))
        ends_step = kind == "scaler.update" or kind == "optimizer.step" and not event.get("via_scaler")
        if group_by == "update" and ends_step:
            pending = True
    return numbers


def timeline(events: list[dict[str, Any]], *, group_by: str, group_label: str, title: str,
             caption: str) -> dict[str, Any]:
    """The trace of `events` (observed["events"]): every group, one row per call; `focus` later keeps one.
    One pass each way, whatever the number of events (the stream is the learner's to fill)."""
    groups = _group_starts(events, group_by)
    outcomes = _step_outcomes(events, groups)
    rows: list[dict[str, Any]] = []
    for position, (event, group) in enumerate(zip(events, groups)):
        kind = event.get("event")
        if kind not in CALLS or kind == "scaler.unscale_" and event.get("internal"):
            continue
        if kind == "optimizer.step" and event.get("via_scaler"):
            continue  # shown as its scaler.step's "taken"
        row: dict[str, Any] = {"event": event.get("index"), "group": group, "line": event.get("line"),
                               "call": event.get("function") if kind == "clip" else CALLS[kind],
                               "autocast": event.get("autocast"),
                               "dtype": event.get("output_dtype") or event.get("autocast_dtype"),
                               "backward": event.get("on") if kind == "backward" else None,
                               "grads": None if kind != "backward" else
                               ("clear" if event.get("grads_clear") else "not clear"),
                               "step": None, "scale": None}
        if kind == "scaler.step":
            row["step"] = outcomes[position]
        if kind == "optimizer.step":
            row["step"] = "taken, directly"
        if kind == "scaler.update":
            row["scale"] = _finite(event.get("scale_after"))  # None when it is none, or not finite
        rows.append(row)
    return {"title": title, "caption": caption, "group_label": group_label, "group": 1,
            "groups": max(groups, default=1), "rows": rows}


def _step_outcomes(events: list[dict[str, Any]], groups: list[int]) -> dict[int, str]:
    """What became of each scaler.step (by position), read in one backward pass: the optimizer stepped
    under it before the next scaler.step or update of its group ("taken"); it returned without a step, as
    it does for inf/NaN gradients, and its group went on ("skipped"); or nothing followed in its group (it
    raised)."""
    outcomes: dict[int, str] = {}
    group = None
    for position in range(len(events) - 1, -1, -1):
        event = events[position]
        if groups[position] != group:  # what lies after, within this group only
            group, stepped, ended, called = groups[position], False, False, False
        kind = event.get("event")
        if kind == "scaler.step":
            outcomes[position] = ("taken" if stepped else "skipped (inf/NaN gradients)" if ended or called
                                  else "did not complete (it raised)")
        if kind in ("scaler.update", "scaler.step"):
            ended, stepped = True, False
        elif kind == "optimizer.step" and event.get("via_scaler"):
            stepped = True
        called = called or kind in CALLS
    return outcomes


def focus(trace: dict[str, Any] | None, marked: Iterable[int | None]) -> dict[str, Any] | None:
    """Keep the group holding the first marked event that is in the trace (a failing check's), else the
    first group; the rows of the marked events get "marked": True."""
    if trace is None:
        return None
    marked = [m for m in marked if m is not None]
    by_event = {row["event"]: row for row in trace["rows"]}
    group = next((by_event[m]["group"] for m in marked if m in by_event), 1)
    rows = [{**row, "marked": row["event"] in marked} for row in trace["rows"] if row["group"] == group]
    return {**trace, "group": group, "rows": rows}


def _thin(points: list[list[float]]) -> list[list[float]]:
    if len(points) <= MAX_POINTS:
        return points
    step = (len(points) - 1) / (MAX_POINTS - 1)
    return [points[round(i * step)] for i in range(MAX_POINTS)]


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def line_figure(id: str, title: str, x_label: str, y_label: str, caption: str, alt: str,
                series: dict[str, Iterable[tuple[float, Any]]], log_y: bool = False) -> dict[str, Any]:
    """Lines: `series` maps a name ("Your run") to (x, y) points; non-finite and (with log_y) non-positive
    values are left out (the caption should say what that means)."""
    out = []
    for name, points in series.items():
        kept = [[float(x), y] for x, y in ((x, _finite(y)) for x, y in points)
                if y is not None and (y > 0 or not log_y)]
        out.append({"name": name, "points": _thin(kept)})
    return {"kind": "line", "id": id, "title": title, "x_label": x_label, "y_label": y_label,
            "caption": caption, "alt": alt, "log_y": log_y, "series": out}


def bar_figure(id: str, title: str, y_label: str, caption: str, alt: str,
               bars: list[tuple[str, float, str]]) -> dict[str, Any]:
    """Bars: (label, value, role) with role "yours", "reference" or "limit" (drawn as a line)."""
    return {"kind": "bar", "id": id, "title": title, "y_label": y_label, "caption": caption, "alt": alt,
            "bars": [{"label": label, "value": _finite(value) or 0.0, "role": role} for label, value, role in bars]}


def _cell(value: Any) -> Any:
    """A table cell as JSON holds it: a number (a non-finite one as its text, 'nan', 'inf'), a string, None."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value if isinstance(value, (int, float, str)) or value is None else str(value)


def table_figure(id: str, title: str, columns: list[str], rows: list[list[Any]], caption: str, alt: str,
                 marked_rows: Iterable[int] = ()) -> dict[str, Any]:
    return {"kind": "table", "id": id, "title": title, "columns": columns,
            "rows": [[_cell(c) for c in row] for row in rows],
            "caption": caption, "alt": alt, "marked_rows": sorted(set(marked_rows))}


def conformed(trace: Any, figures: Any) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[str]]:
    """The trace and figures a verdict may carry, with what was left out said for the author: each part plain
    JSON with finite numbers only (a browser's JSON.parse refuses NaN), fitting result.json's "trace" or
    "figure", at most MAX_FIGURES figures, together within DISPLAY_CAP (`capped`). Checks build them from
    what the learner's process recorded, so a part that does not fit is left out, never the verdict."""
    from jsonschema import ValidationError

    from grader.core import jsonschemas
    from grader.core.protocol import MAX_FIGURES

    problems: list[str] = []

    def fits(part: Any, name: str) -> bool:
        try:
            size = len(json.dumps(part, allow_nan=False))
        except (TypeError, ValueError, RecursionError) as exc:
            problems.append(f"{name} left out of the verdict: not plain JSON with finite numbers ({exc})"[:300])
            return False
        if size > DISPLAY_CAP:
            problems.append(f"{name} left out of the verdict: {size} bytes of JSON, over {DISPLAY_CAP}")
            return False
        try:
            jsonschemas.validate(part, "result", name)
        except ValidationError as exc:
            problems.append(f"{name} left out of the verdict: {exc.message}"[:300])
            return False
        return True

    trace = trace if trace is not None and fits(trace, "trace") else None
    figures = [figure for figure in (figures if isinstance(figures, list) else [figures]) if fits(figure, "figure")]
    if len(figures) > MAX_FIGURES:
        problems.append(f"{len(figures) - MAX_FIGURES} figure(s) left out of the verdict: at most {MAX_FIGURES}")
        figures = figures[:MAX_FIGURES]
    trace, figures, notes = capped(trace, figures)
    return trace, figures, problems + notes


def capped(trace: dict[str, Any] | None, figures: list[dict[str, Any]]) -> tuple[dict[str, Any] | None,
                                                                                 list[dict[str, Any]], list[str]]:
    """Trace and figures within DISPLAY_CAP: figures are dropped from the last, then the trace's rows cut."""
    notes: list[str] = []
    figures = list(figures)

    def size() -> int:
        return len(json.dumps({"trace": trace, "figures": figures}))

    while figures and size() > DISPLAY_CAP:
        dropped = figures.pop()
        notes.append(f"figure '{dropped.get('id')}' left out: the verdict's figures are capped at "
                     f"{DISPLAY_CAP // 1024} KB")
    if trace is not None and size() > DISPLAY_CAP:
        rows = trace["rows"]
        while rows and size() > DISPLAY_CAP:
            rows = rows[: len(rows) * 3 // 4]
            trace = {**trace, "rows": rows, "truncated": True}
        notes.append("the timeline was cut to fit the verdict's size cap")
    return trace, figures, notes


def as_text(trace: dict[str, Any] | None, figures: list[dict[str, Any]]) -> str:
    """A compact text form for `grader check` (the JSON carries the data)."""
    lines: list[str] = []
    if trace:
        lines.append(f"{trace['title']} ({trace['group_label']} {trace['group']} of {trace['groups']}):")
        for row in trace["rows"]:
            facts = [f"autocast {'on' if row['autocast'] else 'off'}" if row["autocast"] is not None else "",
                     row["dtype"] or "", f"on {row['backward']}" if row["backward"] else "",
                     f"grads {row['grads']}" if row["grads"] else "", f"step {row['step']}" if row["step"] else "",
                     f"scale {row['scale']:g}" if isinstance(row["scale"], (int, float)) else ""]
            where = f"line {row['line']:>3}" if row["line"] else "        "
            lines.append(f"  {'>' if row.get('marked') else ' '} {where}  {row['call']:<28} "
                         + ", ".join(f for f in facts if f))
    for figure in figures:
        lines.append(f"{figure['title']}: {figure['alt']}")
    return "\n".join(lines)
