"""Where the tests find the repository and its course, and the exercise most of them submit (the
course's first, amp-step): plain constants any test may import."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
EXERCISES = REPO / "exercises"

LESSON = "mixed-precision"
EXERCISE = "mixed-precision/amp-step"
SOLUTION = (REPO / "exercises/mixed-precision/amp-step/solution.py").read_text()
