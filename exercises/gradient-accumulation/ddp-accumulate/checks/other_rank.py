"""Rank 1 of the gloo group: the grading side's own code, forked by the probe's prepare() before the
learner's code is loaded, reporting on a channel of its own (referee.py).

It runs a correct accumulation loop on micro-batches drawn by the grading side and counts every gradient
all-reduce the learner's rank joins (grader/checks/ddp.py says how), where the learner's code cannot
write the count.
"""
from torch.nn.parallel import DistributedDataParallel

import scenario
from grader.checks import ddp as two_ranks


def count(report: dict, store: str, told: dict) -> None:
    size = scenario.size()  # before the model: size() builds one of its own from seed 0
    two_ranks.join_group(store, 1, scenario.WORLD, scenario.TIMEOUT_S)
    model, optimizer, loss_fn = scenario.build_model(told["model_seed"])
    ddp = DistributedDataParallel(model)
    micro_batches = scenario.micro_batches(told["seed"])

    def step() -> None:
        optimizer.step()
        optimizer.zero_grad()

    def loop(stopped) -> bool:
        optimizer.zero_grad()
        if not two_ranks.accumulate_windows(ddp, micro_batches, scenario.windows(), loss_fn, stopped, step):
            return False
        report["params_after"] = scenario.params(model)
        return True

    two_ranks.count_allreduces(report, ddp, loop, size, scenario.TIMEOUT_S)
