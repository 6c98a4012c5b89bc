"""The device a verdict names is true of the run (issue 53, friction 3): "cpu (cuda emulated)" and the emulation's
note only where the learner's run used the CUDA emulation (grader/learner/emulation.py), "cpu" where nothing asked
for CUDA (ddp-clip's gloo loop, feed-the-model's DataLoader)."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.harness.interpret import EMULATION_NOTE
from tests.support.grading import check_json
from tests.support.paths import EXERCISES

FEED = "profiling/feed-the-model"
# feed-the-model's solution, moving each batch to "cuda" by name instead of to the model's device: on this
# CPU-only host the emulation gives it the CPU, so this run, and only this one, used it.
ASKS_FOR_CUDA = ("x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)",
                 "x, y = x.to('cuda', non_blocking=True), y.to('cuda', non_blocking=True)")


def _device_and_notes(exercise: str, path: Path) -> tuple[str, list[str]]:
    code, result = check_json(exercise, path)
    assert code == 0, result
    return result["device"], result.get("grader_notes", [])


@pytest.mark.parametrize("exercise", [FEED, "gradient-accumulation/ddp-clip"])
def test_a_run_that_never_asks_for_cuda_says_cpu(exercise: str) -> None:
    device, notes = _device_and_notes(exercise, EXERCISES / exercise / "solution.py")
    assert device == "cpu"
    assert EMULATION_NOTE not in notes


def test_the_same_code_asking_for_cuda_says_emulated(tmp_path: Path) -> None:
    solution = (EXERCISES / FEED / "solution.py").read_text()
    assert ASKS_FOR_CUDA[0] in solution
    submission = tmp_path / "to_cuda.py"
    submission.write_text(solution.replace(*ASKS_FOR_CUDA))
    device, notes = _device_and_notes(FEED, submission)
    assert device == "cpu (cuda emulated)"
    assert EMULATION_NOTE in notes


def test_cuda_autocast_says_emulated() -> None:
    device, notes = _device_and_notes("mixed-precision/amp-step", EXERCISES / "mixed-precision/amp-step/solution.py")
    assert device == "cpu (cuda emulated)"
    assert EMULATION_NOTE in notes
