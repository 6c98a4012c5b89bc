"""The grading side of ddp-accumulate: rank 0's data and loop, sent from here, and rank 0's report, received
here (grader/checks/ddp.py: grader_rank_referee)."""
from pathlib import Path

from grader.checks import ddp

Referee = ddp.grader_rank_referee(Path(__file__).with_name("grader_rank.py"), fields={"params_after": ddp.weights_field})
