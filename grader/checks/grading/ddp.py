"""What a DDP exercise's checks/test_*.py say of a failed run (the grading process, after the run)."""
from __future__ import annotations

from typing import Any

from grader.checks.learner.collectives import FOLLOWED_TEXT


def explained(message: str, grader_rank: dict[str, Any] | None) -> str:
    """The learner's error `message`, and when a collective raised it, plain words for why: what the grader's
    rank could not follow, or that no process joined."""
    error = (grader_rank or {}).get("collective_error")
    why = (f"The grader's process (rank 0) could not follow a collective of your process's own: {error}." if error
           else "A collective your process made waited for a partner that never came: " + FOLLOWED_TEXT
           + "; a collective made any other way (or on DDP's own group) finds no partner."
           if "gloo" in message or "Timed out" in message or "Connection closed by peer" in message else "")
    return f"{message.rstrip('. ')}. {why}" if why else message
