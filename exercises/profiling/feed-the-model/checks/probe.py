"""Runs in the learner's process: one epoch replayed with the batches and the data loading watched, then the
timing rounds the grading side asks for (referee.py times them on its own clock)."""
import time

import torch
from torch.utils.data import dataloader

import scenario
from grader.checks.learner.probes import timed_rounds
from grader.checks.learner.probing import ask, install_cuda_emulation

# What the DataLoader iterators of the learner's loop did: the time spent inside their __next__ (fetching,
# collating, waiting for workers), the batches they gave, and the workers the loaders started.
LOADERS = {"seconds": 0.0, "batches": 0, "loaders": 0, "workers": 0, "drop_last": False}


def _watch_loader_iterators() -> None:
    """Time every DataLoader iterator's __next__ (the class all of them share), from before the learner's code
    loads; what it records chooses a message, the verdicts rest on the grading side's clock and weights."""
    base = dataloader._BaseDataLoaderIter
    original_next = base.__next__

    def timed_next(self):
        if not getattr(self, "_grader_seen", False):
            self._grader_seen = True
            LOADERS["loaders"] += 1
            LOADERS["workers"] = max(LOADERS["workers"], int(getattr(self, "_num_workers", 0)))
            LOADERS["drop_last"] = LOADERS["drop_last"] or bool(getattr(self, "_drop_last", False))
        started = time.perf_counter()
        batch = original_next(self)
        LOADERS["seconds"] += time.perf_counter() - started
        LOADERS["batches"] += 1
        return batch

    base.__next__ = timed_next


def prepare():
    install_cuda_emulation()  # .to('cuda', non_blocking=True) and pin_memory work on a CPU-only host
    _watch_loader_iterators()


class _WatchedLoss(torch.nn.CrossEntropyLoss):
    """The task's loss, recording the targets of the first KEPT_BATCHES batches (the replay only)."""

    def __init__(self, targets: list) -> None:
        super().__init__()
        self.targets = targets

    def forward(self, input, target):
        if len(self.targets) < scenario.KEPT_BATCHES:
            self.targets.append(target.detach().cpu().clone())
        return super().forward(input, target)


def _reset() -> None:
    for i in range(len(scenario.FETCHES)):
        scenario.FETCHES[i] = 0
    LOADERS.update(seconds=0.0, batches=0, loaders=0, workers=0, drop_last=False)


def probe(api):
    # 1. One epoch on data the grading side draws now, each batch the model sees recorded (its inputs; the
    #    targets through the loss), with the fetches and the loaders' time.
    model, optimizer, _, dataset, sampler, batch_size = scenario.build(ask({"op": "replay"})["seed"], api.device)
    inputs, targets, calls = [], [], [0]

    def record_input(module, args):
        # Only the batches the checks read are kept (scenario.KEPT_BATCHES); every call with a tensor is counted.
        if args and isinstance(args[0], torch.Tensor):
            calls[0] += 1
            if len(inputs) < scenario.KEPT_BATCHES:
                inputs.append(args[0].detach().cpu().clone())

    model.register_forward_pre_hook(record_input)
    _reset()
    started = time.perf_counter()
    api.call(model, optimizer, _WatchedLoss(targets), dataset, sampler, batch_size)
    scenario.synchronize(api.device)
    seconds = time.perf_counter() - started
    fetches = list(scenario.FETCHES)
    loaders = dict(LOADERS)
    params_after = scenario.params(model)

    # 2. The grader's timing, on its own clock (referee.py, grader.checks.referee.timing): each round's data is drawn
    #    by the grading side when the round starts, and the weights after the epoch go back to be checked.
    def timed_round(seed):
        model, optimizer, loss_fn, dataset, sampler, batch_size = scenario.build(seed, api.device)
        api.call(model, optimizer, loss_fn, dataset, sampler, batch_size)
        scenario.synchronize(api.device)
        return {"params": scenario.params(model)}

    timed_rounds(timed_round)
    return {"inputs": inputs, "targets": targets, "calls": calls[0], "params_after": params_after,
            "seconds": seconds, "fetched_one": fetches[scenario.ONE], "fetched_batches": fetches[scenario.BATCHES],
            "fetched_batch_records": fetches[scenario.BATCH_RECORDS], "loaders": loaders}
