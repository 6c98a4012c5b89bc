"""What the learner's loop did in each batch, read from the grading side's copy of the events (shared by
the checks and the figure of mixed-precision/skipped-steps). A batch starts where loss_fn is called; the
probe's marks `scheduler.step` and `ema.update` say where the learner advanced the scheduler and the EMA,
and `observed["advances"]` holds each mark's line, in the same order."""
from __future__ import annotations

import math
from typing import Any

from grader.checks.grading.judging import of_kind

ADVANCES = ("scheduler.step", "ema.update")
CALL = {"scheduler.step": "scheduler.step()", "ema.update": "ema.update_parameters(model)"}
EARLY = {"scheduler.step": "the learning rate moved on before knowing whether the step would be skipped",
         "ema.update": "it averaged in the weights from before this batch's update, before knowing whether the "
                       "step would be skipped"}
SKIPPED = {"scheduler.step": "the learning rate moved on although the weights did not",
           "ema.update": "it averaged the unchanged weights in once more, pulling the EMA back toward them"}


def batches(observed: dict[str, Any]) -> list[dict[str, Any]]:
    """Per batch: whether the optimizer really stepped (its class's step ran), the scale before and after
    scaler.update() (None without one), the index of scaler.step's event, and the advances made in it."""
    out: list[dict[str, Any]] = []
    lines = iter(observed["advances"])
    before: list[dict[str, Any]] = []  # advances before the first batch's loss
    for event in observed["events"]:
        if event["event"] == "loss":
            out.append({"real": False, "update": None, "step_index": None, "advances": []})
            continue
        if event["event"] == "mark" and event.get("label") in ADVANCES:
            advance = {"what": event["label"], "index": event["index"], "line": next(lines, {}).get("line")}
            (out[-1]["advances"] if out else before).append(advance)
            continue
        if not out:
            continue
        if event["event"] == "optimizer.class_step":
            out[-1]["real"] = True
        elif event["event"] == "scaler.update" and out[-1]["update"] is None:
            out[-1]["update"] = event
        elif event["event"] == "scaler.step" and out[-1]["step_index"] is None:
            out[-1]["step_index"] = event["index"]
    if before:
        out.insert(0, {"before": True, "real": False, "update": None, "step_index": None, "advances": before})
    return out


def scale_words(value: float) -> str:
    """A scale as a power of two when it is one (2^19), else as a number."""
    exponent = math.log2(value) if value > 0 else 0.5
    return f"2^{int(exponent)}" if exponent == int(exponent) else f"{value:g}"


def _numbered(spans: list[dict[str, Any]]) -> list[tuple[int | None, dict[str, Any]]]:
    first = 1 if spans and spans[0].get("before") else 0
    return [(None if span.get("before") else i - first + 1, span) for i, span in enumerate(spans)]


def _fall(span: dict[str, Any]) -> str:
    update = span["update"]
    if update and update.get("scale_before") is not None and update.get("scale_after") is not None:
        return (f" (scaler.update() lowered the scale from {scale_words(update['scale_before'])} to "
                f"{scale_words(update['scale_after'])})")
    return ""


COUNTED = {"scheduler.step": "scheduler_steps", "ema.update": "ema_updates"}


def wrong_advance(observed: dict[str, Any], what: str) -> tuple[str, int | None] | None:
    """The first place the loop advanced `what` ('scheduler.step' or 'ema.update') where a correct loop does
    not, or did not where it does, in words and with the learner's line; None when every batch is right, or
    when the marks do not account for every advance (the learner's code reached the scheduler's or the
    EMA's class past the probe's instance wrapper): then they cannot say where it went wrong."""
    call = CALL[what]
    marks = sum(a["what"] == what for a in observed["advances"])
    if marks != observed[COUNTED[what]]:
        return None
    for number, span in _numbered(batches(observed)):
        mine = [a for a in span["advances"] if a["what"] == what]
        for k, advance in enumerate(mine):
            where = f" (line {advance['line']})" if advance["line"] else ""
            if number is None:
                return (f"{call}{where} ran before the first batch's scaler.step(optimizer), before the optimizer had "
                        "stepped at all (PyTorch warns: Detected call of `lr_scheduler.step()` before "
                        f"`optimizer.step()`): {EARLY[what]}.",
                        advance["line"])
            if span["step_index"] is not None and advance["index"] < span["step_index"]:
                return (f"{call}{where} ran in batch {number} before scaler.step(optimizer): {EARLY[what]}.",
                        advance["line"])
            if not span["real"]:
                return (f"{call}{where} ran in batch {number}, whose step scaler.step(optimizer) skipped{_fall(span)}: "
                        f"{SKIPPED[what]}.", advance["line"])
            if k == 1:
                return f"{call}{where} ran twice in batch {number}; once per real step.", advance["line"]
        if number is not None and span["real"] and not mine:
            update = span["update"]
            grew = (update and update.get("scale_before") is not None and update.get("scale_after") is not None
                    and update["scale_after"] > update["scale_before"])
            why = (f" The scale grew there (from {scale_words(update['scale_before'])} to "
                   f"{scale_words(update['scale_after'])}, after "
                   "enough real steps in a row): only a falling scale means a skipped step." if grew else "")
            return (f"Batch {number}'s step was real (the optimizer stepped) but {call} did not run after it.{why}",
                    None)
    return None


def real_step_count(observed: dict[str, Any]) -> int:
    """How many times the optimizer really stepped in the learner's loop (its class's step pre-hook)."""
    return len(of_kind(observed["events"], "optimizer.class_step"))


def table_rows(observed: dict[str, Any]) -> tuple[list[list[Any]], list[int]]:
    """The figure's rows, one per batch, and the rows where an advance is wrong (marked)."""
    rows, marked = [], []
    seen = {what: sum(a["what"] == what for a in observed["advances"]) == observed[COUNTED[what]]
            for what in ADVANCES}  # every advance marked (see wrong_advance)
    for number, span in _numbered(batches(observed)):
        update = span["update"]
        scale = (f"{scale_words(update['scale_before'])} → {scale_words(update['scale_after'])}"
                 if update and update.get("scale_before") is not None and update.get("scale_after") is not None
                 else "-")
        cells = []
        wrong = False
        for what in ADVANCES:
            if not seen[what]:
                cells.append("not seen")
                continue
            mine = [a for a in span["advances"] if a["what"] == what]
            early = [a for a in mine if span["step_index"] is not None and a["index"] < span["step_index"]]
            lines = ", ".join(f"line {a['line']}" for a in mine if a["line"])
            cells.append(("before the step" if early else "yes") + (f" ({lines})" if lines else "") if mine else "no")
            wrong = wrong or bool(early) or (bool(mine) != span["real"]) or len(mine) > 1
        step = "-" if number is None else ("stepped" if span["real"] else "skipped")
        if wrong:
            marked.append(len(rows))
        rows.append(["before batch 1" if number is None else number, scale, step, *cells])
    return rows, marked


__all__ = ["batches", "wrong_advance", "real_step_count", "table_rows", "scale_words"]
