"""What the verdict shows of the learner's loop (grader/core/display.py): the weight each micro-batch's tokens
got in the update of its window, against a token mean's, and each update's gradient error against the
token-mean gradient of its window."""
import pytest

import scenario
import windows
from grader.checks.grading.judging import calls, figure, line_figure, show, table_figure


@pytest.fixture(scope="module")
def updates(observed, run):
    spans = calls(observed["events"])
    return windows.analyse(spans[0] if spans else [], run)


@figure
def test_show_the_token_weights(updates, run):
    valid, padded = windows.counts(run["seed"])
    fitted = {u.window[0]: u for u in updates
              if u.window is not None and u.weights is not None and u.residual <= windows.FIT_RESIDUAL}
    rows, marked = [], []
    for number, window in enumerate(scenario.windows(), 1):
        total = sum(valid[i] for i in window)
        update = fitted.get(window[0])
        for k, i in enumerate(window):
            yours = windows.one_over(update.weights[k]) if update and len(update.weights) == len(window) else "-"
            if update and yours != "-" and not windows.same(update.weights[k], 1 / total):
                marked.append(len(rows))
            rows.append([i + 1, number, valid[i], padded[i] - valid[i], yours, f"1/{total}"])
    show(figure=table_figure(
        "token-weights", "How much each token weighed in its window's update",
        ["micro-batch", "window", "valid tokens", "padding", "each token's weight in your update",
         "in a token mean (1 / the window's valid tokens)"], rows,
        "In a token mean every valid token of a window weighs the same, 1 over the window's valid tokens; a marked "
        "row weighed its tokens otherwise (a micro-batch's mean divided by accum_steps weighs a short micro-batch's "
        "tokens far more).",
        f"Table of the {len(rows)} micro-batches: their window, valid and padding tokens, the weight each of their "
        "tokens had in your update (fitted on the grading side from the gradient your step used; '-' where no "
        "weighting of the window's micro-batches explains it) and the weight a token mean gives.",
        marked_rows=marked))
    show(figure=line_figure(
        "gradient-error", "Each update's gradient against its window's token mean",
        "update (window)", "largest difference (share of the token mean's largest entry)",
        f"A correct update stays under {windows.GRAD_TOLERANCE:.1%}; dividing by accum_steps or by a micro-batch's "
        "own count is off by 10% or more, most in windows whose micro-batches differ most.",
        f"Line chart: for each of your {len(updates)} updates, the largest difference between the gradient the "
        "optimizer used and the token-mean gradient of its window at the same weights, as a share of the latter's "
        "largest entry, with the allowed difference.",
        {"Your updates": [(u.number, u.error) for u in updates if u.want is not None],
         "Allowed": [(u.number, windows.GRAD_TOLERANCE) for u in updates if u.want is not None]}))
