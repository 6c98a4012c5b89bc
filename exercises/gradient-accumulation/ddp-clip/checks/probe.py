"""Runs in the learner's confined process, rank 1 of a real 2-process gloo group; rank 0 is the grader's.

prepare() forks rank 0 before the learner's code is loaded: the grading side's own code (other_rank.py),
which runs a correct clipped accumulation loop on micro-batches the learner's process never sees and
counts the gradient all-reduces this rank joins, reporting on a channel of its own
(grader/harness/helper.py). Then it installs the AMP spies in this process only (rank 0 is forked without
them), which record every backward, clipping and GradScaler call. Both ranks meet through a file:// store
in the scratch folder (no TCP rendezvous) and talk over the sandbox's own loopback. This rank wraps the
scenario's model in DistributedDataParallel, calls the learner's train on its micro-batches with a
GradScaler, then tells rank 0 it is done (other_rank.DONE) and waits for it to report.

The all-reduces during each micro-batch are also counted here, by a DDP comm hook, for the verdict and to
say where they fell: how many there were is rank 0's count. The weights after every real optimizer step
are recorded by a step post-hook, to compare with rank 0's and the reference's window by window.
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

RANK0 = {}
MAX_RECORDED_STEPS = 3 * scenario.MICRO_BATCHES  # a loop that steps more often is wrong already; bounded


def prepare():
    store = os.path.join(tempfile.mkdtemp(), "store")
    RANK0.update(store=store, pid=probing.start_helper(lambda channel: other_rank.run(channel, store)))
    probing.install_amp_spies()  # after the fork: rank 0 runs without them


def probe(api):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # the sandbox's only interface; spares gloo's hostname lookup
    report, keep = {"rank": scenario.LEARNER_RANK}, None
    try:
        dist.init_process_group("gloo", init_method=f"file://{RANK0['store']}", rank=scenario.LEARNER_RANK,
                                world_size=scenario.WORLD, timeout=timedelta(seconds=scenario.TIMEOUT_S))
        report, keep = _train(api)
    except Exception:  # noqa: BLE001 - the group itself failed (not the learner's call): say what
        report = {"rank": scenario.LEARNER_RANK, "failed": traceback.format_exc(limit=-2)[-2000:]}
    finally:
        if dist.is_initialized():
            try:
                dist.all_reduce(torch.full((_size(),), other_rank.DONE))  # after this, rank 0 reports
            except Exception:  # noqa: BLE001 - rank 0 is gone or the group broke: its report says so
                pass
        finished = probing.wait_helper(RANK0["pid"], 2 * scenario.TIMEOUT_S)
    del keep
    return {"learner": report, "grader_rank_exited": finished}


def _size():
    return sum(p.numel() for p in scenario.build_model(0)[0].parameters())


def _train(api):
    model, optimizer, loss_fn = scenario.build_model(api.seed)
    forwards = [0]
    model.register_forward_pre_hook(lambda module, args: forwards.__setitem__(0, forwards[0] + 1))
    probing.watch_model(model)
    ddp = DistributedDataParallel(model)
    allreduces = [0] * scenario.MICRO_BATCHES  # per micro-batch: the all-reduces while it was the latest

    def counting_hook(state, bucket):
        if 0 < forwards[0] <= scenario.MICRO_BATCHES:
            allreduces[forwards[0] - 1] += 1
        return allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, counting_hook)
    probing.watch_optimizer(optimizer)  # optimizer.class_step: the norm of the gradients each real step used
    weights = []  # after each real step, the outcome window by window

    def stepped(*_):
        if len(weights) < MAX_RECORDED_STEPS:
            weights.append(scenario.params(model))

    optimizer.register_step_post_hook(stepped)
    scaler = scenario.make_scaler()
    probing.RECORDER.mark("call")
    _, error = api.try_call(ddp, optimizer, scaler, loss_fn, scenario.micro_batches(api.seed), scenario.ACCUM_STEPS,
                            scenario.MAX_NORM)
    report = {"rank": scenario.LEARNER_RANK, "error": error, "allreduces": allreduces, "forwards": forwards[0],
              "weights": weights, "params_after": scenario.params(model)}
    return report, ddp
