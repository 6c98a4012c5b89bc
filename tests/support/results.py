"""Results as the grader stored them in older schemas, for the tests that show them again (tests/web,
tests/browser: stored results)."""
from __future__ import annotations

from typing import Any

from tests.support.paths import EXERCISE


def schema_1_result() -> dict[str, Any]:
    """An amp-step result in the stored shape of schema 1: no per-check status, a hint string, device
    "unknown", the sandbox's notes among the learner's. Two of six checks fail."""
    checks = [{"id": check_id, "title": title, "passed": passed, "message": "" if passed else message,
               "hint": "" if passed else hint, "line": None if passed else line}
              for check_id, title, passed, message, hint, line in [
                  ("runs", "Your step runs", True, "", "", None),
                  ("autocast-scope", "Forward pass under autocast", True, "", "", None),
                  ("scaled-backward", "Backward on the scaled loss", False, "backward() was called on the raw loss.",
                   "Call scaler.scale(loss).backward().", 4),
                  ("step-update-order", "scaler.step then scaler.update", True, "", "", None),
                  ("grads-cleared", "Gradients cleared", False, "The gradients were never cleared.",
                   "Call optimizer.zero_grad() first.", 2),
                  ("matches-reference", "Matches the reference step", True, "", "", None)]]
    return {"exercise": EXERCISE, "title": "Write one AMP training step", "passed": False, "score": 0.6667,
            "status": "failed", "checks": checks, "error": None, "device": "unknown", "sandbox": "local",
            "duration_s": 2.5, "output": "", "output_truncated": False,
            "notes": ["Graded by the local sandbox (namespaces)."], "seed": 7}
