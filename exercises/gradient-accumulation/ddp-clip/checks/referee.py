"""The grading side of ddp-clip: rank 0's data and loop, sent from here, and rank 0's report, received here
(grader/checks/referee/ddp.py: grader_rank_referee, the referee of both DDP exercises). Rank 0's micro-batches' seed
and the secrets of grader_rank.py's `draw` are drawn here from `secrets`."""
import secrets
from pathlib import Path

from grader.checks.referee import ddp

Referee = ddp.grader_rank_referee(Path(__file__).parent, lambda: secrets)
