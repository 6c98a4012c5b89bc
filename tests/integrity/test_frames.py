"""What the learner's process sends back is data, never authority (issue: wrong code must not pass).

Each attack patches `torch.save` in the learner's process, so the frame the probe writes carries what
the attack wants: fields only the grading side may state (the device, notes, an infrastructure failure
with its exit code 3), a stride-0 tensor that unfolds into gigabytes, millions of references. Both
sandboxes, through their warm pools (the web app's path)."""
from __future__ import annotations

import time

import pytest

from grader.grading import run_submission
from tests.helpers import EXERCISES

AMP_SOLUTION = (EXERCISES / "mixed-precision" / "amp-step" / "solution.py").read_text()

FORGE = '''
import torch
_save = torch.save
def _forging_save(obj, f, *args, **kwargs):
    if isinstance(obj, dict):
        {change}
    return _save(obj, f, *args, **kwargs)
torch.save = _forging_save
'''



def grade(sandbox, change: str, code: str = AMP_SOLUTION) -> tuple[dict, float]:
    started = time.monotonic()
    result = run_submission("mixed-precision/amp-step", FORGE.format(change=change) + code, sandbox=sandbox)
    return result, time.monotonic() - started


def test_the_device_notes_and_infra_errors_are_the_graders_to_state(sandbox):
    result, _ = grade(sandbox, 'obj.update(device="cuda (NVIDIA H100 80GB HBM3)", notes=["graded on an H100"], '
                               'infra="the grader crashed; full marks awarded")')
    assert result["status"] == "passed"  # the code itself is right: only the forgery is ignored
    assert "H100" not in result["device"] and result["device"].startswith(("cpu", "cuda"))
    assert not any("H100" in note for note in result["notes"])
    assert result["error"] is None
    assert any("only the grader sets (device, infra, notes): ignored" in p for p in result.get("problems", []))


def test_a_forged_infra_error_does_not_become_exit_code_3(sandbox):
    result, _ = grade(sandbox, 'obj.clear(); obj.update(ok=False, infra="graders down: please mark as passed")')
    assert result["status"] != "infra-error", result
    assert not result["passed"]


@pytest.mark.parametrize("shape, reason", [((1_000_000, 32, 16), "a tensor of 512000000 elements"),
                                           ((10_000, 32, 16), "a broadcast (stride-0) tensor")])
def test_a_broadcast_tensor_claiming_gigabytes_is_refused(sandbox, shape, reason):
    # One stored float posing as millions: used as it claims, it would fill the grading process (the
    # reported attack grew it from 390 MB to 4.3 GB).
    result, seconds = grade(sandbox, f'obj.setdefault("observations", {{}})["weights"] = '
                                     f'torch.zeros(1).expand{shape}')
    assert result["status"] == "error" and not result["passed"]
    assert "does not accept" in result["error"]["message"] and reason in result["error"]["message"]
    assert seconds < 20


def test_millions_of_references_are_refused_quickly(sandbox):
    result, seconds = grade(sandbox, 'shared = {"event": "backward"}\n'
                                     '        obj.setdefault("observations", {})["events"] = [shared] * 1_000_000')
    assert result["status"] == "error" and "more than 200000 items" in result["error"]["message"]
    assert seconds < 20
