"""The grading side's run of the original compute_loss (grading process only: never imported by probe.py,
scenario.py or example.py, so the learner's process holds none of it).

The scenario's batches straddle Z_MAX row by row on every step (scenario.SIDES, OUTLIERS), which
`reference` asserts on its own run: a seed for which they did not would be the exercise's failure, not the
learner's. Measured over seeds 0-1999 on the CPU (every batch built at the original's weights): the batch mean
z-loss at most 3.37 on the under-steps and at least 7.65 on the over-steps; the outlier rows' z-loss 6.0 on the
under-steps and at most 3.21 on the over-steps.
"""
import torch
import torch.nn.functional as F

import scenario
from scenario import Z_MAX, Z_WEIGHT


def original_compute_loss(model, x, y):
    """The starter's compute_loss, without its print (which computes nothing)."""
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
    if z_loss > Z_MAX:
        loss = loss + Z_WEIGHT * z_loss
    return loss


def reference(seed: int, device: str) -> dict:
    """The original's run on the scenario's data: each step's loss, its batch mean z-loss before the step and
    how many of its rows are over Z_MAX on their own, and the weights after each step."""
    model, optimizer, data = scenario.build(seed, device)
    zs, rows_over, weights = [], [], []

    def loss_noting_the_batch(model, x, y):
        rows = scenario.row_z_losses(model, x)
        zs.append(float(rows.mean()))
        rows_over.append(int((rows > Z_MAX).sum()))
        return original_compute_loss(model, x, y)

    losses = scenario.train(loss_noting_the_batch, model, optimizer, data, device, weights)
    for step, (z, over) in enumerate(zip(zs, rows_over)):
        if (z > Z_MAX) != (scenario.SIDES[step] == "over") or not 0 < over < scenario.BATCH:
            raise RuntimeError(f"graph-breaks scenario, seed {seed}, step {step + 1}: batch mean z-loss {z:.3g}, "
                               f"{over} of {scenario.BATCH} rows over Z_MAX; it must straddle Z_MAX, its mean on "
                               f"the {scenario.SIDES[step]} side")
    return {"losses": losses, "z_losses": zs, "rows_over": rows_over, "weights": weights}

