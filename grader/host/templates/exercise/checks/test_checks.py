"""The checks: they run in the grading process, on what probe.py observed, never beside learner code."""
import pytest
import torch

import scenario
from grader.checks.grading.judging import check, fail

TOLERANCE = 1e-5  # float32 rounding between two runs of the same step


@pytest.fixture(scope="module")
def reference(run: dict) -> dict[str, torch.Tensor]:
    """A correct step on the same model and data, computed here where the learner's code cannot reach."""
    model, optimizer, loss_fn, x, y = scenario.build(run["seed"], run["device"])
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()
    return scenario.params(model)


@check("matches-reference")
def test_update_matches_a_correct_step(observed: dict, reference: dict[str, torch.Tensor]) -> None:
    error = observed["error"]
    if error:
        fail(f"train_step raised. {error['message']}", error["line"])
    for name, want in reference.items():
        diff = float((observed["params_after"][name] - want).abs().max())
        if not diff <= TOLERANCE:
            fail(f"After one call of train_step the weights differ from a correct step's by up to {diff:.3g} "
                 f"(in '{name}'). A correct step clears the gradients, backpropagates the loss and steps "
                 "the optimizer.")
