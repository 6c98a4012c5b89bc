"""The referee of both DDP exercises (gradient-accumulation/ddp-accumulate, ddp-clip): the grading process,
while the learner's code runs. It draws the grader's rank's secrets, sends that rank its loop (the exercise's
checks/grader_rank.py) and keeps its report; the ranks themselves are grader/checks/learner/ddp.py's.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from grader.checks.referee import outside


def draw_seed(source: Any) -> int:
    """The grader's rank's data seed, from `source` (the referee's `secrets` module, looked up when drawn)."""
    seed: int = source.randbelow(2**31 - 2) + 1
    return seed


MAX_ITEMS = 16  # of a reported list: the grader's rank reports per window, and no loop of these has more


def weights_field(value: Any) -> dict[str, torch.Tensor] | None:
    """A report's weights, as a referee keeps them: tensors by name, or None."""
    return {n: t for n, t in value.items() if isinstance(n, str) and isinstance(t, torch.Tensor)} \
        if isinstance(value, dict) else None


def _item(value: Any) -> dict[str, torch.Tensor] | float | None:
    if isinstance(value, dict):
        return weights_field(value)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _checker(initial: Any) -> Callable[[Any], Any]:
    """How a referee reads a field of the report, by the field's value in the loop's REPORT: a list (per
    window: weights or numbers, bounded), else weights."""
    if isinstance(initial, list):
        return lambda value: [_item(v) for v in value[:MAX_ITEMS]] if isinstance(value, list) else []
    return weights_field


def grader_rank_referee(checks: Path, source: Callable[[], Any]) -> type:
    """The referee of every exercise whose probe forks the grader's rank (checks/referee.py:
    `Referee = grader_rank_referee(Path(__file__).parent, lambda: secrets)`, the same line in each).

    It draws from `source()` (the referee module's `secrets`, looked up when drawn) the grader's rank's data
    seed (`grader_rank_seed`) and whatever the exercise's checks/grader_rank.py's `draw(source)` adds (a
    further secret: ddp-clip's spike). They are told to that rank with the source of grader_rank.py (its
    loop), never to the learner's process, and held as the referee's attributes. It receives the rank's
    report, each field of grader_rank.py's `REPORT` read by its kind (`_checker`). The checks get
    `outside["grader_rank"]` (the report) and the drawn secrets."""
    import importlib.util

    path = checks / "grader_rank.py"
    spec = importlib.util.spec_from_file_location("exercise_grader_rank", path)
    if spec is None or spec.loader is None:  # never for a .py file that exists
        raise ImportError(f"cannot load {path}")
    loop = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loop)  # the grading process's own copy: for REPORT and draw, never run here
    checkers = {"allreduces": lambda v: v if type(v) is int and v >= 0 else 0,
                "collectives": lambda v: v if type(v) is int and v >= 0 else 0,
                "finished": bool, "done": bool,
                "error": lambda v: str(v)[:300] if v else None,
                "collective_error": lambda v: str(v)[:300] if v else None,
                **{name: _checker(initial) for name, initial in getattr(loop, "REPORT", {}).items()}}

    def draw() -> dict[str, int]:
        drawn = {"grader_rank_seed": draw_seed(source())}
        if hasattr(loop, "draw"):
            drawn.update(loop.draw(source()))
        return drawn

    class Referee(outside.Referee):
        helper_channel = True
        grader_rank_seed: int  # drawn in __init__, with the exercise's own secrets (vars(self).update)

        def __init__(self, seed: int, device: str) -> None:
            super().__init__(seed, device)
            drawn = draw()
            self.drawn = sorted(drawn)
            vars(self).update(drawn)  # each secret an attribute of its own (tests/course/test_secrets.py reads them)
            self.told = False
            self.report: dict[str, Any] | None = None

        def _secrets(self) -> dict[str, int]:
            return {name: getattr(self, name) for name in self.drawn}

        def answer_helper(self, request: dict[str, Any]) -> dict[str, Any]:
            if request.get("op") == "data" and not self.told:
                self.told = True
                told = {k: v for k, v in self._secrets().items() if k != "grader_rank_seed"}
                return {"seed": self.grader_rank_seed, "model_seed": self.seed, "code": path.read_text(), **told}
            if request.get("op") == "report" and self.report is None and isinstance(request.get("report"), dict):
                self.report = {key: check(request["report"].get(key)) for key, check in checkers.items()}
                return {}
            raise outside.ChannelError(f"rank 0 sent {str(request)[:80]} out of turn")

        def outside(self) -> dict[str, Any]:
            return {**super().outside(), "grader_rank": self.report, **self._secrets()}

    return Referee
