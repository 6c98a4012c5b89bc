"""The grading side's alone (never imported in the learner's process): the original loop, whose weights after an
epoch are what the learner's must match, the original's batches, and the bars the verdict holds the learner's
epoch to. The checks (test_feed_the_model.py) and the referee (referee.py) import it; the probe and
scenario.py never do, so nothing the learner's code can import or read computes the right answer.
"""
import torch
from torch.utils.data import DataLoader

from grader.checks.learner.scenarios import plain_step
from scenario import Order, Records

# The outcome: the weights after the epoch, against the original loop's on the same data, within
# TOLERANCE * max(1, the largest weight). Measured (seeds 1-3): reordering the records inside every batch
# moves them by 3e-8 (float rounding); one record left out of the last batch by 2e-4, the last batch dropped
# by 1e-2.
TOLERANCE = 1e-5
# The original epoch's time over the learner's, the median of the per-round ratios (grader.checks.referee.timing).
MIN_SPEEDUP = 3.0
# How close a row the learner's model was given must be to a record, as dataset[i] decodes it, to be that
# record (float32 decoding in any batch order differs by float rounding only), and the band of the records'
# projections searched for it.
SAME_ROW, PROJECTION_BAND = 1e-4, 1e-3


def original_train(model, optimizer, loss_fn, dataset, sampler, batch_size):
    """The starter's epoch: a DataLoader that fetches one record at a time and collates them."""
    device = next(model.parameters()).device
    for x, y in DataLoader(dataset, batch_size=batch_size, sampler=sampler):
        plain_step(model, optimizer, loss_fn, x.to(device), y.to(device))


def batches_of(sampler: Order, batch_size: int) -> list[list[int]]:
    """The original's batches: the sampler's order cut into batch_size pieces, the last one shorter."""
    order = sampler.indices
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def decoded(dataset: Records) -> tuple[torch.Tensor, torch.Tensor]:
    """Every record decoded, in index order, and the labels (to tell which records a batch held)."""
    return dataset[range(len(dataset))]


class RecordFinder:
    """Which record each row of a batch is: a projection of every record, sorted once, searched for each row's
    (within PROJECTION_BAND), each candidate confirmed on the whole row (within SAME_ROW). Vectorised: the work
    is a few tensor operations per batch, and a Python step only per candidate of a row whose first one was not
    it (records whose projections fall within the band of each other: a handful at most, fixed by the data)."""

    def __init__(self, features: torch.Tensor) -> None:
        self.features = features
        self.w = torch.randn(features.shape[1], generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        self.keys, self.order = torch.sort(features.double() @ self.w)

    def records_of(self, rows: torch.Tensor) -> list[int | None]:
        """Each row's record (None: no record decodes to it). `rows`: [k, FEATURES]."""
        rows = rows.float()
        p = rows.double() @ self.w
        lo = torch.searchsorted(self.keys, p - PROJECTION_BAND)
        hi = torch.searchsorted(self.keys, p + PROJECTION_BAND, right=True)
        first = self.order[lo.clamp(max=len(self.order) - 1)]
        same = (hi > lo) & ((self.features[first] - rows).abs().amax(1) <= SAME_ROW)
        found: list[int | None] = [int(r) if ok else None for r, ok in zip(first.tolist(), same.tolist())]
        for i in torch.nonzero(~same & (hi - lo > 1)).flatten().tolist():  # the first candidate was another record
            candidates = self.order[int(lo[i]) + 1:int(hi[i])]
            close = (self.features[candidates] - rows[i]).abs().amax(1) <= SAME_ROW
            found[i] = int(candidates[close][0]) if bool(close.any()) else None
        return found
