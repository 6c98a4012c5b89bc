"""The grading side of ddp-clip: rank 0's data, drawn here, and rank 0's report, received here.

Rank 0 of the gloo group is the grading side's own code (other_rank.py), forked by the probe before the
learner's code is loaded and talking to this referee on a channel of its own (grader/harness/helper.py):
it asks for its micro-batches' seed, drawn here from the operating system's randomness and never told
to the learner's process, and reports how many gradient all-reduces the learner's rank joined, the
weights its own correct clipped loop had after each window, and the norm of each window's all-reduced
gradient before its clipping.
"""
from __future__ import annotations

import math
import secrets
from typing import Any

import torch

from grader.checks import outside

MAX_WINDOWS = 16  # rank 0's loop has 3; anything longer is not its report


class Referee(outside.Referee):
    helper_channel = True

    def __init__(self, seed: int, device: str) -> None:
        super().__init__(seed, device)
        self.grader_rank_seed = secrets.randbelow(2**31 - 2) + 1
        self.told = False
        self.report: dict[str, Any] | None = None

    def answer_helper(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("op") == "data" and not self.told:
            self.told = True
            return {"seed": self.grader_rank_seed, "model_seed": self.seed}
        if request.get("op") == "report" and self.report is None and isinstance(request.get("report"), dict):
            self.report = _checked(request["report"])
            return {}
        raise outside.ChannelError(f"rank 0 sent {str(request)[:80]} out of turn")

    def outside(self) -> dict[str, Any]:
        return {**super().outside(), "grader_rank": self.report, "grader_rank_seed": self.grader_rank_seed}


def _weights(value: Any) -> dict[str, torch.Tensor] | None:
    return {n: t for n, t in value.items() if isinstance(t, torch.Tensor)} if isinstance(value, dict) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _checked(report: dict[str, Any]) -> dict[str, Any]:
    weights = report.get("weights") if isinstance(report.get("weights"), list) else []
    norms = report.get("synced_norms") if isinstance(report.get("synced_norms"), list) else []
    return {"allreduces": int(report.get("allreduces", 0)), "finished": bool(report.get("finished")),
            "done": bool(report.get("done")), "error": str(report["error"]) if report.get("error") else None,
            "weights": [_weights(w) for w in weights[:MAX_WINDOWS]],
            "synced_norms": [_number(n) for n in norms[:MAX_WINDOWS]]}
