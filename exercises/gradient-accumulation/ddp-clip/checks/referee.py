"""The grading side of ddp-clip: rank 0's data and loop, sent from here, and rank 0's report, received here
(grader/checks/ddp.py: grader_rank_referee). Besides rank 0's micro-batches' seed, the micro-batch whose
loss spikes (which window overflows) is drawn here from `secrets`."""
import math
import secrets
from pathlib import Path

import scenario
from grader.checks import ddp

MAX_WINDOWS = 16  # rank 0's loop has 3; anything longer is not its report


def _draw() -> dict:
    full = [i for window in scenario.windows()[:-1] for i in window]  # the window after it shows the halved scale
    return {"grader_rank_seed": ddp.draw_seed(secrets), "spike": full[secrets.randbelow(len(full))]}


def _weights(value):
    return [ddp.weights_field(w) for w in value[:MAX_WINDOWS]] if isinstance(value, list) else []


def _numbers(value):
    return [float(n) if isinstance(n, (int, float)) and math.isfinite(n) else None for n in value[:MAX_WINDOWS]] \
        if isinstance(value, list) else []


Referee = ddp.grader_rank_referee(Path(__file__).with_name("grader_rank.py"), _draw,
                                  {"weights": _weights, "synced_norms": _numbers, "scales": _numbers})
