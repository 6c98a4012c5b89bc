"""Rank 0's loop: the grading side's own, correct clipped accumulation. Never imported: the referee sends
this source to rank 0 (grader/checks/learner/ddp.py), so it is never in the learner's process, which rank 0 is a
fork of.

It runs on micro-batches drawn by the grading side (one of them the loss spike), through its own
DistributedDataParallel and GradScaler. After each window it records its weights and the norm of the
gradient DDP gave it, unscaled, before its own clipping: both ranks hold that same all-reduced gradient, so
it is also the norm the learner's rank had to clip, measured where the learner's code cannot write.
"""
import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel

import scenario

REPORT = {"weights": [], "synced_norms": [], "scales": []}  # per window, besides the counts


def draw(source):
    """The referee's secret besides this rank's seed (grader/checks/referee/ddp.py: grader_rank_referee): which micro-batch
    of this rank spikes, in a full window (the window after it shows the halved scale)."""
    full = [i for window in scenario.windows()[:-1] for i in window]
    return {"spike": full[source.randbelow(len(full))]}


def count(report, group, told, counting):
    model, optimizer, loss_fn = scenario.build_model(told["model_seed"])
    ddp = DistributedDataParallel(model, process_group=group)
    scaler = scenario.make_scaler()
    micro_batches = scenario.micro_batches(told["seed"], told["spike"])

    def loop(stopped):
        optimizer.zero_grad()
        for window in scenario.windows():
            for i in window:
                x, y = micro_batches[i]
                with ddp.no_sync() if i != window[-1] else contextlib.nullcontext():
                    scaler.scale(loss_fn(ddp(x), y) / len(window)).backward()
                if stopped():
                    return False
            scaler.unscale_(optimizer)  # once, after the window's last backward: DDP has all-reduced
            report["synced_norms"].append(scenario.grad_norm(model))
            torch.nn.utils.clip_grad_norm_(model.parameters(), scenario.MAX_NORM)
            scaler.step(optimizer)  # skips the window whose gradient overflowed
            scaler.update()
            optimizer.zero_grad()
            report["weights"].append(scenario.params(model))
            report["scales"].append(float(scaler.get_scale()))
        return True

    counting(ddp, loop)
