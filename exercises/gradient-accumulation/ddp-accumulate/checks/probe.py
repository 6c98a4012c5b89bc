"""Runs in the learner's confined process, rank 0 of a real 2-process gloo group; rank 1 is the grader's.

prepare() forks rank 1 before the learner's code is loaded: the grading side's own code (other_rank.py),
which runs a correct accumulation loop on micro-batches the learner's process never sees and counts the
gradient all-reduces this rank joins, reporting on a channel of its own (grader/harness/helper.py). Both
meet through a file:// store in the scratch folder (no TCP rendezvous) and talk over the sandbox's own
loopback. This rank wraps the scenario's model in DistributedDataParallel, calls the learner's train on
its micro-batches, then tells rank 1 it is done (other_rank.DONE) and waits for it to report.

The all-reduces during each micro-batch are also counted here, by a DDP comm hook, for the verdict's
figure and to say where they fell: how many there were is rank 1's count.
"""
import os
import tempfile
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel

import other_rank
import scenario
from grader.checks import probing

RANK1 = {}


def prepare():
    store = os.path.join(tempfile.mkdtemp(), "store")
    RANK1.update(store=store, pid=probing.start_helper(lambda channel: other_rank.run(channel, store)))


def probe(api):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # the sandbox's only interface; spares gloo's hostname lookup
    report, keep = {"rank": 0}, None
    try:
        dist.init_process_group("gloo", init_method=f"file://{RANK1['store']}", rank=0, world_size=scenario.WORLD,
                                timeout=timedelta(seconds=scenario.TIMEOUT_S))
        report, keep = _train(api)
    except Exception:  # noqa: BLE001 - the group itself failed (not the learner's call): say what
        report = {"rank": 0, "failed": traceback.format_exc(limit=-2)[-2000:]}
    finally:
        if dist.is_initialized():
            try:
                dist.all_reduce(torch.full((_size(),), other_rank.DONE))  # after this, rank 1 reports
            except Exception:  # noqa: BLE001 - rank 1 is gone or the group broke: its report says so
                pass
        finished = probing.wait_helper(RANK1["pid"], 2 * scenario.TIMEOUT_S)
    del keep
    return {"rank0": report, "rank1_exited": finished}


def _size():
    return sum(p.numel() for p in scenario.build_model(0)[0].parameters())


def _train(api):
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
    steps = [0]  # real optimizer steps, for the message (the outcome is judged by the weights)
    optimizer.register_step_post_hook(lambda *_: steps.__setitem__(0, steps[0] + 1))
    _, error = api.try_call(ddp, optimizer, loss_fn, scenario.micro_batches(api.seed), scenario.ACCUM_STEPS)
    report = {"rank": 0, "error": error, "allreduces": allreduces, "forwards": forwards[0], "steps": steps[0],
              "params_after": scenario.params(model)}
    return report, ddp
