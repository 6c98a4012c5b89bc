"""The grading side's correct loop for mixed-precision/fused-skip (grading process only: never imported by
probe.py or scenario.py, so no learner process can import, read or reach it; grader/reference/__init__.py)."""
from __future__ import annotations

from typing import Any

import torch

from grader.checks.grading.judging import weight_tolerance
from scenario import build, outcome


def reference(seed: int, device: str, outliers: tuple[int, ...]) -> dict[str, Any]:
    """A correct loop on the same model, data (the referee's outlier batches) and device, in the grading process: a step was skipped when
    scaler.update() lowered the scale (the fused AdamW's step() ran anyway), the warm-up advanced and the step
    counted only on real steps. Also each batch's scale before and after."""
    model, optimizer, scheduler, scaler, loss_fn, batches = build(seed, device, outliers)
    real_steps, scales = 0, []
    for x, y in batches:
        optimizer.zero_grad()
        with torch.autocast(device_type=device, dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        scales.append((float(before), float(scaler.get_scale())))
        if scaler.get_scale() >= before:
            scheduler.step()
            real_steps += 1
    return {**outcome(model, optimizer, scheduler), "real_steps": real_steps, "scales": scales}


def tolerance(want: dict[str, Any], device: str) -> float:
    """How far the learner's weights may end from the correct loop's. On a CPU the same loop on the same
    data reproduces it bit for bit (measured: 0 for solution.py and the corpus's passing loops, seeds 0-2),
    while a warm-up step on the wrong batch with the right count (a loop hardcoded on batches that are not this grading's outliers,
    referee.py) ends 6e-4 to 4e-3 away: the shared tolerance (1e-3) let some of that pass. CUDA keeps the
    shared tolerance (not measured here)."""
    shared = weight_tolerance(want)
    return shared / 100 if device == "cpu" else shared
