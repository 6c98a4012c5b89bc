"""The learner's loop batch by batch, read from the grading side's copy of the events (shared by the checks
and the figure of mixed-precision/fused-skip). A batch starts where loss_fn is called. Whether its update ran
is read from the scale: GradScaler lowers it exactly when the gradients held inf or NaN, and then the fused
AdamW's kernel skipped the update although its step() (and any step hook) ran. The probe's marks
`scheduler.step` say where the learner advanced the warm-up; `observed["advances"]` holds their lines."""
from __future__ import annotations

import math
from typing import Any


def scale_words(value: float) -> str:
    """A scale as a power of two when it is one (2^19), else as a number."""
    if not (math.isfinite(value) and value > 0):
        return f"{value:g}"
    exponent = math.log2(value)
    return f"2^{int(exponent)}" if exponent == int(exponent) else f"{value:g}"


def spans(observed: dict[str, Any]) -> list[dict[str, Any]]:
    """Per batch (numbered from 1; number 0 holds what ran before the first batch, when anything did): the
    scale before and after scaler.update() (None without one), whether the update really ran (the scale did not
    fall), how often the optimizer's step() was called, and the lines of the scheduler steps made in it."""
    lines = iter(observed["advances"])
    out: list[dict[str, Any]] = [{"number": 0, "scales": None, "real": False, "step_calls": 0, "advances": []}]
    for event in observed["events"]:
        kind = event["event"]
        if kind == "loss":
            out.append({"number": len(out), "scales": None, "real": False, "step_calls": 0, "advances": []})
        elif kind == "mark" and event.get("label") == "scheduler.step":
            out[-1]["advances"].append(next(lines, {}).get("line"))
        elif kind == "optimizer.class_step":
            out[-1]["step_calls"] += 1
        elif kind == "scaler.update" and out[-1]["scales"] is None and event.get("scale_after") is not None:
            out[-1]["scales"] = (event["scale_before"], event["scale_after"])
            out[-1]["real"] = event["scale_after"] >= event["scale_before"]
    return out if out[0]["advances"] else out[1:]


def real_steps(observed: dict[str, Any]) -> int:
    """How many updates really ran in the learner's loop, by its own scaler's readings."""
    return sum(span["real"] for span in spans(observed))


def _where(line: int | None) -> str:
    return f" (line {line})" if line else ""


def wrong_advance(observed: dict[str, Any]) -> tuple[str, int | None] | None:
    """The first batch where the loop advanced the warm-up although the update was skipped, or did not although
    it ran, or did twice, in words and with the learner's line; None when every batch is right, or when the
    marks do not account for every scheduler step (the learner's code reached the class's step past the
    probe's wrapper): then they cannot say where."""
    if len(observed["advances"]) != observed["scheduler_steps"]:
        return None
    for span in spans(observed):
        mine = span["advances"]
        if span["number"] == 0:
            return (f"scheduler.step(){_where(mine[0])} ran before the first batch: the warm-up started one step "
                    "ahead.", mine[0])
        if mine and not span["real"]:
            before, after = span["scales"] or (None, None)
            fall = (f" (scaler.update() lowered the scale from {scale_words(before)} to {scale_words(after)})"
                    if before is not None else "")
            called = (" The fused AdamW's step() was still called: GradScaler calls a fused optimizer's step() on "
                      "every batch and its kernel skips the update, so a step hook fires on skipped steps too."
                      if span["step_calls"] else "")
            return (f"scheduler.step(){_where(mine[0])} ran in batch {span['number']}, whose update was "
                    f"skipped{fall}: the warm-up moved on although the weights did not.{called}", mine[0])
        if len(mine) > 1:
            return (f"scheduler.step(){_where(mine[1])} ran {len(mine)} times in batch {span['number']}; once per "
                    "real step.", mine[1])
        if span["real"] and not mine:
            before, after = span["scales"]
            grew = (f" The scale grew there (from {scale_words(before)} to {scale_words(after)}, after "
                    f"enough real steps in a row): only a falling scale means a skipped step." if after > before else "")
            return (f"Batch {span['number']}'s update was real but scheduler.step() did not run after it.{grew}",
                    None)
    return None
