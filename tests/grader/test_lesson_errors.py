"""Errors the lessons explain are restated in their words, at the line that causes them (issue 28, item 4),
and a forward pass's message says what it really computed in (item 3)."""
from pathlib import Path

import pytest

from grader.checks.grading import verdicts
from grader.checks.grading.checking import CheckFailed
from grader.host.grading import run_submission

MISTAKE = (Path(__file__).resolve().parents[2] / "exercises" / "mixed-precision" / "amp-step" / "mistakes"
           / "model_half.py").read_text()


def test_fp16_gradients_are_explained_at_the_cast(warm_sandbox):
    result = run_submission("mixed-precision/amp-step", MISTAKE, sandbox=warm_sandbox("local"))
    runs = next(c for c in result["checks"] if c["id"] == "runs")
    cast_line = next(n for n, line in enumerate(MISTAKE.splitlines(), 1) if line.strip() == "model.half()")
    assert not runs["passed"]
    assert f"cast to float16 on line {cast_line} (.half())" in runs["message"], runs["message"]
    assert "Keep the weights in float32" in runs["message"], runs["message"]
    assert "Attempting to unscale FP16 gradients" in runs["message"]  # PyTorch's own words stay, for a search
    assert runs["line"] == cast_line, runs


def forward(**fields):
    return {"event": "forward", "line": 7, "index": 0, "autocast": False, "autocast_dtype": None,
            "weights_dtype": "float32", **fields}


LOSS = {"event": "loss", "line": 8, "index": 1, "autocast": True, "autocast_dtype": "float16"}
BACKWARD = {"event": "backward", "line": 9, "index": 2, "autocast": False, "autocast_dtype": None, "on": "scaled"}


def scope_message(event):
    with pytest.raises(CheckFailed) as failed:
        verdicts.check_autocast_scope([event, LOSS, BACKWARD])
    return str(failed.value)


def test_a_float32_forward_without_autocast_says_float32():
    assert "ran without autocast, in float32" in scope_message(forward())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_forward_on_16_bit_weights_does_not_claim_float32(dtype):
    message = scope_message(forward(weights_dtype=dtype, output_dtype=dtype))
    assert "float32." not in message.split("AMP keeps")[0], message
    assert f"on weights cast to {dtype}" in message, message


def test_autocast_entered_inside_the_forward_counts():
    verdicts.check_autocast_scope([forward(inner_autocast="float16", output_dtype="float32"), LOSS, BACKWARD])


def test_autocast_entered_inside_in_float32_is_refused():
    assert "dtype float32, not a 16-bit type" in scope_message(forward(inner_autocast="float32"))


ZERO_GRAD_MID_WINDOW = (Path(__file__).resolve().parents[2] / "exercises" / "gradient-accumulation" / "accumulate-amp"
                        / "mistakes" / "zero-grad-every-micro-batch.py").read_text()


def test_gradients_cleared_mid_window_mark_the_zero_grad_that_did_it(warm_sandbox):
    result = run_submission("gradient-accumulation/accumulate-amp", ZERO_GRAD_MID_WINDOW, sandbox=warm_sandbox("local"))
    check = next(c for c in result["checks"] if c["id"] == "grads-cleared-per-window")
    zero_grad = next(n for n, line in enumerate(ZERO_GRAD_MID_WINDOW.splitlines(), 1)
                     if line.strip() == "optimizer.zero_grad()")
    assert check["status"] == "failed" and check["line"] == zero_grad, check
    assert f"cleared by optimizer.zero_grad() (line {zero_grad})" in check["message"], check["message"]
