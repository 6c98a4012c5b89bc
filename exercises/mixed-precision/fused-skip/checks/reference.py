"""The grading side's correct loop for mixed-precision/fused-skip (grading process only: never imported by
probe.py or scenario.py, so no learner process can import, read or reach it; grader/reference/__init__.py)."""
from __future__ import annotations

from typing import Any

import torch

from scenario import build, outcome


def reference(seed: int, device: str) -> dict[str, Any]:
    """A correct loop on the same model, data and device, in the grading process: a step was skipped when
    scaler.update() lowered the scale (the fused AdamW's step() ran anyway), the warm-up advanced and the step
    counted only on real steps. Also each batch's scale before and after."""
    model, optimizer, scheduler, scaler, loss_fn, batches = build(seed, device)
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
