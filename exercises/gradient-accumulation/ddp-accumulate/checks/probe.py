"""Runs in the learner's confined process: a real 2-process gloo group, one rank per process.

This process is rank 0; it forks rank 1. Both meet through a file:// store in the scratch folder (no
TCP rendezvous) and talk over the sandbox's own loopback. Each wraps the scenario's model in
DistributedDataParallel, counts the gradient all-reduces during each micro-batch with a DDP comm hook,
and calls the learner's train on its own micro-batches.

Rank 1 reports through a file and leaves with os._exit, its group and model still alive: tearing a gloo
group down while the other rank still runs can hang (seen under load: rank 1 stuck in the group's
destructor after its report was made). Rank 0 destroys its group only after rank 1 is gone.
"""
import os
import signal
import tempfile
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel

import scenario


def _rank(api, rank: int, store: str) -> tuple[dict, object]:
    """Run the learner's train as `rank`; return the report and the DDP model (kept alive by the caller)."""
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # the sandbox's only interface; spares gloo's hostname lookup
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=scenario.WORLD,
                            timeout=timedelta(seconds=scenario.TIMEOUT_S))
    model, optimizer, loss_fn = scenario.build_model(api.seed)
    forwards = [0]
    model.register_forward_pre_hook(lambda module, args: forwards.__setitem__(0, forwards[0] + 1))
    ddp = DistributedDataParallel(model)
    allreduces = [0] * scenario.MICRO_BATCHES  # per micro-batch: the all-reduces while it was the latest

    def counting_hook(state, bucket):
        if 0 < forwards[0] <= scenario.MICRO_BATCHES:
            allreduces[forwards[0] - 1] += 1
        return allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, counting_hook)
    _, error = api.try_call(ddp, optimizer, loss_fn, scenario.micro_batches(api.seed, rank), scenario.ACCUM_STEPS)
    report = {"rank": rank, "error": error, "allreduces": allreduces, "forwards": forwards[0],
              "params_after": scenario.params(model)}
    return report, ddp


def _wait(child: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.waitpid(child, os.WNOHANG)[0] == child:
            return True
        time.sleep(0.02)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    return False


def probe(api):
    folder = tempfile.mkdtemp()
    store, rank1_out = os.path.join(folder, "store"), os.path.join(folder, "rank1.pt")
    child = os.fork()
    if child == 0:  # rank 1: report through a file, never return into the probe
        try:
            torch.save(_rank(api, 1, store)[0], rank1_out)
        except BaseException:  # noqa: BLE001 - a forked process must reach os._exit
            with open(rank1_out + ".error", "w") as f:
                f.write(traceback.format_exc(limit=-2)[-2000:])
        os._exit(0)
    keep = None
    try:
        report, keep = _rank(api, 0, store)
        ranks = [report]
    except Exception:  # noqa: BLE001 - the group itself failed (not the learner's call): say what
        ranks = [{"rank": 0, "failed": traceback.format_exc(limit=-2)[-2000:]}]
    finished = _wait(child, 2 * scenario.TIMEOUT_S)
    if os.path.exists(rank1_out):
        ranks.append(torch.load(rank1_out))
    elif os.path.exists(rank1_out + ".error"):
        ranks.append({"rank": 1, "failed": open(rank1_out + ".error").read()})
    else:
        ranks.append({"rank": 1, "failed": "it did not finish" if not finished else "it ended without a report"})
    del keep
    if dist.is_initialized():
        dist.destroy_process_group()
    return {"ranks": ranks}
