"""The grading side of ddp-accumulate: rank 0's data and loop, sent from here, and rank 0's report, received
here (grader/checks/ddp.py: grader_rank_referee). Rank 0's micro-batches' seed is drawn here from `secrets`."""
import secrets
from pathlib import Path

from grader.checks import ddp


def _draw() -> dict:
    return {"grader_rank_seed": ddp.draw_seed(secrets)}


Referee = ddp.grader_rank_referee(Path(__file__).with_name("grader_rank.py"), _draw,
                                  {"params_after": ddp.weights_field})
