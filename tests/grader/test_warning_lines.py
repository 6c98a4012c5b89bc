"""A warning PyTorch raises inside a spy names the learner's line, not the grader's file (issue 28, item 4):
`clip_grad_norm_` warns with a `stacklevel` that, through the clipping spy, pointed at grader/learner/amp.py."""
from pathlib import Path

from grader.host.grading import run_submission

SOLUTION = (Path(__file__).resolve().parents[2] / "exercises" / "mixed-precision" / "amp-clip-step"
            / "solution.py").read_text()
EMPTY_CLIP = "    torch.nn.utils.clip_grad_norm_((p for p in []), max_norm)  # warns: an empty generator\n"


def test_a_warning_raised_through_a_spy_names_the_learners_line(warm_sandbox):
    lines = SOLUTION.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "clip_grad_norm_" in line)
    code = "".join(lines[:at] + [EMPTY_CLIP] + lines[at:])
    result = run_submission("mixed-precision/amp-clip-step", code, sandbox=warm_sandbox("local"))
    assert result["status"] == "passed", result
    output = result["output"]
    assert f"submission.py:{at + 1}: UserWarning: `parameters` is an empty generator" in output, output
    assert "grader/" not in output, output
