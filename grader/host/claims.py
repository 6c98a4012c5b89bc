"""Messages that contradict the grader's own evidence (issue 28, item 3).

A failing check may fail for a teaching reason while the numbers are right, but its message must not claim
an outcome that the outcome checks (`outcome: true` in exercise.yaml: the weights or loss against the
grading side's own correct run) disprove: "their
weights drift apart" while both processes matched the reference, "the update was tiny" while every update
matched a correct step's. Nor may it say a forward pass ran in float32 when the verdict's own timeline
shows that forward's output in 16 bits.

`contradictions(result, checks)` lists each such message; `grader validate` refuses a mistake whose
verdict has one, and the corpus test (tests/corpus) every corpus file's, so no message can drift from the
evidence unnoticed.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

from grader.core.course import CheckSpec
from grader.core.result import Result

# Phrases that claim the training outcome was wrong: weights apart, off, unclipped, shrunk, not learning.
OUTCOME_CLAIMS = re.compile(
    r"drift apart|ended apart|update was tiny|far too hard|never clipped|weights differ|differs? from a correct"
    r"|did not fall|held inf or NaN|inf/NaN into the weights|weights still changed")
FLOAT32_CLAIM = re.compile(r"ran without autocast, in float32")
SIXTEEN_BIT = {"float16", "bfloat16"}


def contradictions(result: Result, checks: Iterable[CheckSpec]) -> list[str]:
    """Each failing message of `result` that its outside evidence disproves, as "check id: why"."""
    outcome = {spec.id for spec in checks if spec.outcome}
    status = {check["id"]: check["status"] for check in result.get("checks", [])}
    outcome_right = bool(outcome) and all(status.get(i) == "passed" for i in outcome)
    found = []
    for check in result.get("checks", []):
        if check["status"] != "failed":
            continue
        message = check.get("message") or ""
        claim = OUTCOME_CLAIMS.search(message)
        if outcome_right and claim and check["id"] not in outcome:
            found.append(f"{check['id']}: claims a wrong outcome ({claim.group(0)!r}) although every outcome "
                         f"check passed ({', '.join(sorted(outcome))})")
        if FLOAT32_CLAIM.search(message):
            forward = _trace_row(result, check.get("event"))
            if forward is not None and forward.get("dtype") in SIXTEEN_BIT:
                found.append(f"{check['id']}: says the forward pass ran in float32, but the timeline shows its "
                             f"output in {forward['dtype']}")
    return found


def _trace_row(result: Result, event: Any) -> dict[str, Any] | None:
    rows = (result.get("trace") or {}).get("rows") or []
    return next((row for row in rows if event is not None and row.get("event") == event), None)
