"""Two ranks of one real gloo group, for the DDP exercises: the grader's (rank 0) and the learner's (rank 1).
Runs in the learner's process (the probe's prepare() and probe()) and in the grader's rank, a fork of it made
before the learner's code loads; the referee's side is grader/checks/referee/ddp.py, the verdicts' words
grader/checks/grading/ddp.py, the following of the learner's own collectives grader/checks/learner/collectives.py.

The probe's prepare() forks the grader's rank before the learner's code loads (`start_grader_rank`; the
fork is grader/learner/helper.py's, reporting on a channel of its own). That rank asks the referee for its
micro-batches' seed and for its loop (`GraderRankReferee` sends the source of the exercise's
checks/grader_rank.py: the correct loop is never in the learner's process, not even as a module the fork
inherited), and runs that loop through its own DistributedDataParallel.

Two process groups join the ranks. DDP's gradient all-reduces run on a group of their own (`join_group`'s
return), where the grader's rank counts every all-reduce the learner's rank joins (`count_allreduces`):
each window-end backward of its own completes only when the other rank all-reduces too, and once its loop
is done it goes on offering all-reduces of the same size until the learner's rank sends DONE
(`run_learner_rank` does, after train returns): a vector that no gradient is. Collectives are matched in
order, so by then every all-reduce the learner's rank made on that group has been counted where the
learner's code cannot write the count.

The default group is the learner's own: an all-reduce of a sample count, of the loss for logging. The
learner's rank tells the grader's rank each collective it makes there, through a pipe, before it makes it
(`follow_collectives`, a patch of torch.distributed's functions), and the grader's rank makes the same one
as a copy of the learner's rank would: it contributes the learner's own tensors (`_Mirror`). So those
collectives complete, and they carry nothing of the grader's rank (no gradient, no data): an all-reduce
the grader's rank does not count cannot bring the learner's gradients to it, nor its own to the learner.
What the pipe says can only make the grader's rank join collectives on the default group.

The learner's rank counts its own gradient all-reduces per micro-batch too (`AllReduceLog`), for the
verdict and to say where they fell (verdicts.early_allreduces); how many there were is the grader's rank's
count.
"""
# No `from __future__ import annotations` here: DDP checks a comm hook's annotations as objects.
import json
import os
import tempfile
import threading
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel

from grader.checks.learner.collectives import (  # the ranks re-exported for the scenarios
    _NEW_GROUP,
    GRADER_RANK,
    LEARNER_RANK,
    WORLD,
    _Mirror,
    follow_collectives,
)
from grader.learner.helper import start as start_helper
from grader.learner.helper import wait as wait_helper

TIMEOUT_S = 15  # a collective that one rank never joins fails after this, instead of hanging
DONE = 1e30  # every value of the learner's rank's last all-reduce; no gradient of these tasks comes near it


def is_done(contribution: torch.Tensor) -> bool:
    return bool(torch.all((contribution - DONE).abs() <= 1e-3 * DONE))


def join_group(store: str, rank: int) -> dist.ProcessGroup:
    """Join the gloo group through a file:// store (no TCP rendezvous), over the sandbox's loopback; returns
    the group DDP's gradient all-reduces run on (the default group is left to the learner's own)."""
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # the sandbox's only interface; spares gloo's hostname lookup
    timeout = timedelta(seconds=TIMEOUT_S)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD, timeout=timeout)
    return _NEW_GROUP(list(range(WORLD)), timeout=timeout)


# --- the grader's rank ------------------------------------------------------------------------------------

def start_grader_rank(size: int) -> dict[str, Any]:
    """From prepare(): fork the grader's rank. It asks the referee for its data and its loop (the source of
    the exercise's checks/grader_rank.py, whose `count(report, group, told, counting)` builds its DDP and runs
    `counting(ddp, loop)`), joins the group, follows the learner's own collectives, and sends the report (the
    counts, plus the fields of the loop's `REPORT` as the loop filled them); a group that failed because of
    what the learner's rank did is said in `report["error"]`."""
    store = os.path.join(tempfile.mkdtemp(), "store")
    reader, writer = os.pipe()

    def run(channel: Any) -> None:  # grader.learner.helper's channel
        os.close(writer)
        told = channel.ask({"op": "data"})  # the run's seed for the model, this rank's data and its loop
        report: dict[str, Any] = {"allreduces": 0, "finished": False, "done": False, "error": None, "collectives": 0,
                                  "collective_error": None}
        try:
            loop: dict[str, Any] = {"__name__": "grader_rank"}
            exec(compile(told.pop("code"), "grader_rank.py", "exec"), loop)  # noqa: S102 - the referee's own source
            report.update(json.loads(json.dumps(loop.get("REPORT", {}))))  # a fresh copy of the loop's fields
            group = join_group(store, GRADER_RANK)
            threading.Thread(target=_Mirror(reader, report).run, daemon=True).start()
            loop["count"](report, group, told,
                          lambda ddp, train: count_allreduces(report, group, ddp, train, size))
        except Exception as exc:  # noqa: BLE001 - said in the report
            report["error"] = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        channel.ask({"op": "report", "report": report})

    pid = start_helper(run)
    os.close(reader)
    return {"store": store, "pid": pid, "collectives": writer}


def count_allreduces(report: dict[str, Any], group: dist.ProcessGroup, ddp: DistributedDataParallel,
                     loop: Callable[[Callable[[], bool]], bool], size: int) -> None:
    """Run the grader's correct `loop(stopped)` on a thread, counting each all-reduce the learner's rank
    joins on `group` into `report["allreduces"]`. The loop calls `stopped()` after each micro-batch and
    returns early when it is true (the learner's rank has finished), else returns True once every window is
    done; then all-reduces of `size` values are offered until DONE, each one more than a correct loop makes."""
    ended, failed = threading.Event(), []

    def counted(total: torch.Tensor, own: torch.Tensor) -> None:
        if is_done(total - own):
            report["done"] = True
            ended.set()
        else:
            report["allreduces"] += 1

    # DDP's all-reduce (its default hook's average), counted
    def hook(state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        buffer = bucket.buffer().div_(WORLD)
        own = buffer.clone()

        def average(future: torch.futures.Future) -> torch.Tensor:
            counted(future.value()[0], own)
            return future.value()[0]

        return dist.all_reduce(buffer, group=group, async_op=True).get_future().then(average)

    ddp.register_comm_hook(None, hook)

    def run() -> None:
        try:
            if not loop(lambda: report["done"]):
                return
            report["finished"] = True
            flat = torch.zeros(size)
            while not report["done"]:
                own = flat.zero_().clone()
                dist.all_reduce(flat, group=group)
                counted(flat, own)
        except Exception as exc:  # noqa: BLE001 - reported
            failed.append(exc)
        finally:
            ended.set()

    threading.Thread(target=run, daemon=True).start()
    if not ended.wait(TIMEOUT_S):
        report["error"] = f"the other process did not finish its all-reduces within {TIMEOUT_S} s"
    elif failed and not report["done"]:
        raise failed[0]


# --- the learner's rank -----------------------------------------------------------------------------------

class AllReduceLog:
    """The gradient all-reduces of the learner's rank, per micro-batch (while it was the latest forward)."""

    def __init__(self, model: torch.nn.Module, ddp: DistributedDataParallel, micro_batches: int) -> None:
        self.forwards = 0
        self.per_micro_batch = [0] * micro_batches
        model.register_forward_pre_hook(self._forward)
        ddp.register_comm_hook(ddp.process_group, self._hook)

    def _forward(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        self.forwards += 1

    def _hook(self, state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        if 0 < self.forwards <= len(self.per_micro_batch):
            self.per_micro_batch[self.forwards - 1] += 1
        return allreduce_hook(state, bucket)


def run_learner_rank(grader: dict[str, Any], size: int,
                     train: Callable[[dist.ProcessGroup], tuple[dict[str, Any], Any]]) -> tuple[dict[str, Any], bool]:
    """Join the group, follow the learner's own collectives, `train(the gradient group)` (-> the report, and
    what must stay alive until DONE), send DONE and wait for the grader's rank: (the report, whether the
    grader's rank exited in time)."""
    report: dict[str, Any]
    report, keep, group = {"rank": LEARNER_RANK}, None, None
    try:
        group = join_group(grader["store"], LEARNER_RANK)
        follow_collectives(grader["collectives"], group)
        report, keep = train(group)
    except Exception:  # noqa: BLE001 - the group itself failed (not the learner's call): say what
        report = {"rank": LEARNER_RANK, "failed": traceback.format_exc(limit=-2)[-2000:]}
    finally:
        if group is not None:
            try:
                dist.all_reduce(torch.full((size,), DONE), group=group)  # after this, the grader's rank reports
            except Exception:  # noqa: BLE001 - the grader's rank is gone or the group broke: its report says so
                pass
        try:
            os.close(grader["collectives"])  # the grader's rank stops following
        except OSError:
            pass
        finished = wait_helper(grader["pid"], 2 * TIMEOUT_S)
    del keep
    return report, finished
