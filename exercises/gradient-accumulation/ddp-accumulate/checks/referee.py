"""The grading side of ddp-accumulate: rank 1's data, drawn here, and rank 1's report, received here.

Rank 1 of the gloo group is the grading side's own code (other_rank.py), forked by the probe before the
learner's code is loaded and talking to this referee on a channel of its own (grader/harness/helper.py):
it asks for its micro-batches' seed, drawn here from the operating system's randomness and never told
to the learner's process, and reports how many gradient all-reduces the learner's rank joined and the
weights its own correct loop ended with.
"""
from __future__ import annotations

import secrets
from typing import Any

import torch

from grader.checks import outside


class Referee(outside.Referee):
    helper_channel = True

    def __init__(self, seed: int, device: str) -> None:
        super().__init__(seed, device)
        self.rank1_seed = secrets.randbelow(2**31 - 2) + 1
        self.told = False
        self.report: dict[str, Any] | None = None

    def answer_helper(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("op") == "data" and not self.told:
            self.told = True
            return {"seed": self.rank1_seed, "model_seed": self.seed}
        if request.get("op") == "report" and self.report is None and isinstance(request.get("report"), dict):
            self.report = _checked(request["report"])
            return {}
        raise outside.ChannelError(f"rank 1 sent {str(request)[:80]} out of turn")

    def outside(self) -> dict[str, Any]:
        return {**super().outside(), "rank1": self.report, "rank1_seed": self.rank1_seed}


def _checked(report: dict[str, Any]) -> dict[str, Any]:
    params = report.get("params_after")
    return {"allreduces": int(report.get("allreduces", 0)), "finished": bool(report.get("finished")),
            "done": bool(report.get("done")), "error": str(report["error"]) if report.get("error") else None,
            "params_after": {n: t for n, t in params.items() if isinstance(t, torch.Tensor)}
            if isinstance(params, dict) else None}
