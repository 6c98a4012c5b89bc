"""The feed-the-model task: a small classifier trained for one epoch on records that the dataset decodes one
at a time, so the loop waits on its data.

Built identically in the learner's process (probe) and the grader's (checks, referee): the inputs and the
model, nothing that computes what a correct epoch ends with. `Records` is the dataset the learner's `train`
gets: `records[i]` decodes one record, `records[indices]` a whole batch with one vectorised call. The
original loop, its batches and the bars the verdict holds the learner's epoch to are the grading side's
alone (reference.py, never imported in the learner's process).
"""
import mmap

import torch
from torch import nn
from torch.utils.data import Dataset, Sampler

from grader.checks.learner.scenarios import params

FEATURES, HIDDEN, CLASSES = 32, 64, 10
# One epoch: 15 whole batches and a last one of 320 records, so a loop that drops the last batch (or shrinks
# the batches) trains on other data than the original's.
RECORDS, BATCH = 8000, 512
LR, MOMENTUM = 0.05, 0.9
CLIP = 3.0
EPOCH_BATCHES = -(-RECORDS // BATCH)
# The batches of the replayed epoch the probe sends back and the checks read (a loop that makes a few more
# steps is shown as such; the grading side reads no more whatever the frame holds).
KEPT_BATCHES = EPOCH_BATCHES + 2

# What one record costs. records[i] runs 7 small tensor operations (two lookups, a conversion, four
# arithmetic ones) on one row, each paying torch's dispatch (about 1 us on this project's CPU), and the
# default collate then stacks 512 rows and 512 labels; records[indices] runs the same 7 on the whole batch.
# Measured on this project's 2-core machine (one thread, medians of 6 epochs): the original loop's epoch about
# 100 ms, the same loop fetching whole batches 12 ms, most of it the model's steps; in gradings, on the grader's
# clock, 100-110 ms against 18-22 ms (benchmarks/bottleneck_timing.py --exercise profiling/feed-the-model).

# The fetches, counted where the probe reads them: records[i] calls, records[indices] calls and the records
# those decoded. In memory shared with every process this one forks (an anonymous shared mapping), so the
# fetches of DataLoader workers count too (increments from several workers at once may lose a few). The
# grader's own runs count as well, unread.
ONE, BATCHES, BATCH_RECORDS = 0, 1, 2
FETCHES = memoryview(mmap.mmap(-1, 3 * 8)).cast("q")


class Records(Dataset):
    """RECORDS records of FEATURES bytes and a label each, as read from a file of fixed-size records.

    `records[i]`: record i decoded, `(features, label)`: float32 features of shape [FEATURES] (each byte
    scaled to [0, 1], standardized by the dataset's per-feature mean and standard deviation, clipped to
    [-3, 3]) and an int64 label. `records[indices]` (a list, range, slice or 1-D tensor of indices): all of
    them decoded with one call, in that order, `(features [k, FEATURES], labels [k])`."""

    def __init__(self, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self._raw = torch.randint(0, 256, (RECORDS, FEATURES), dtype=torch.uint8, generator=g)
        scaled = self._raw.float() / 255
        self._mean, self._std = scaled.mean(0), scaled.std(0)
        teacher = torch.randn(FEATURES, CLASSES, generator=g)  # labels a model can learn
        self._labels = ((scaled - self._mean) @ teacher + 0.5 * torch.randn(RECORDS, CLASSES, generator=g)).argmax(1)

    def __len__(self) -> int:
        return RECORDS

    def _decode(self, raw: torch.Tensor) -> torch.Tensor:
        return ((raw.float() / 255 - self._mean) / self._std).clamp(-CLIP, CLIP)

    def __getitem__(self, index):
        if isinstance(index, int):
            FETCHES[ONE] += 1
            return self._decode(self._raw[index]), self._labels[index]
        if isinstance(index, slice):
            index = range(*index.indices(RECORDS))
        index = torch.as_tensor(index, dtype=torch.long)
        if index.dim() == 0:
            FETCHES[ONE] += 1
        else:
            FETCHES[BATCHES] += 1
            FETCHES[BATCH_RECORDS] += len(index)
        return self._decode(self._raw[index]), self._labels[index]


class Order(Sampler):
    """The order in which the epoch visits the records: a permutation the grading side draws."""

    def __init__(self, indices: list[int]) -> None:
        self.indices = list(indices)

    def __iter__(self):
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


def build(seed: int, device: str):
    """The model, optimizer, loss, dataset, sampler and batch size of one epoch, all from `seed`."""
    # The CPU generator only (fix-the-bottleneck's scenario says why: torch.manual_seed costs one side more).
    torch.random.default_generator.manual_seed(seed)
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    order = torch.randperm(RECORDS, generator=torch.Generator().manual_seed(seed + 1)).tolist()
    return model, optimizer, nn.CrossEntropyLoss(), Records(seed), Order(order), BATCH


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
