"""Rank 0 of the gloo group: the grading side's own code, forked by the probe's prepare() before the
learner's code is loaded, reporting on a channel of its own (referee.py).

It runs a correct clipped accumulation loop on micro-batches drawn by the grading side, through its own
DistributedDataParallel and GradScaler, and counts every gradient all-reduce the learner's rank joins, as
ddp-accumulate's other rank does (grader/checks/ddp.py says how). After each window it records its weights
and the norm of the gradient DDP gave it, unscaled, before its own clipping: both ranks hold that same
all-reduced gradient, so it is also the norm the learner's rank had to clip, measured where the learner's
code cannot write.
"""
import torch
from torch.nn.parallel import DistributedDataParallel

import scenario
from grader.checks import ddp as two_ranks


def count(report: dict, store: str, told: dict) -> None:
    size = scenario.size()  # before the model: size() builds one of its own from seed 0
    two_ranks.join_group(store, scenario.GRADER_RANK, scenario.WORLD, scenario.TIMEOUT_S)
    model, optimizer, loss_fn = scenario.build_model(told["model_seed"])
    ddp = DistributedDataParallel(model)
    scaler = scenario.make_scaler()
    micro_batches = scenario.micro_batches(told["seed"])

    def step() -> None:
        scaler.unscale_(optimizer)  # once, after the window's last backward: DDP has all-reduced
        report["synced_norms"].append(scenario.grad_norm(model))
        torch.nn.utils.clip_grad_norm_(model.parameters(), scenario.MAX_NORM)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        report["weights"].append(scenario.params(model))

    def loop(stopped) -> bool:
        optimizer.zero_grad()
        return two_ranks.accumulate_windows(ddp, micro_batches, scenario.windows(), loss_fn, stopped, step,
                                            backward=lambda loss: scaler.scale(loss).backward())

    two_ranks.count_allreduces(report, ddp, loop, size, scenario.TIMEOUT_S)
