"""Rank 0's loop: the grading side's own, correct accumulation. Never imported: the referee sends this
source to rank 0 (grader/checks/learner/ddp.py), so it is never in the learner's process, which rank 0 is a fork of.
It runs on micro-batches drawn by the grading side and ends with the weights it reports."""
import contextlib

from torch.nn.parallel import DistributedDataParallel

import scenario

REPORT = {"params_after": None}  # what this rank reports besides the counts: its weights once its loop is done


def count(report, group, told, counting):
    model, optimizer, loss_fn = scenario.build_model(told["model_seed"])
    ddp = DistributedDataParallel(model, process_group=group)
    micro_batches = scenario.micro_batches(told["seed"])

    def loop(stopped):
        optimizer.zero_grad()
        for window in scenario.windows():
            for i in window:
                x, y = micro_batches[i]
                with ddp.no_sync() if i != window[-1] else contextlib.nullcontext():
                    (loss_fn(ddp(x), y) / len(window)).backward()
                if stopped():
                    return False
            optimizer.step()
            optimizer.zero_grad()
        report["params_after"] = scenario.params(model)
        return True

    counting(ddp, loop)
