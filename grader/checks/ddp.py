"""Two ranks of one real gloo group, for the DDP exercises: the learner's, and the grader's own.

The probe's prepare() forks the grader's rank before the learner's code loads (`start_grader_rank`; the
fork is grader/learner/helper.py's, reporting on a channel of its own). That rank runs the exercise's
correct loop on micro-batches the learner's process never sees, through its own DistributedDataParallel,
and counts every gradient all-reduce the learner's rank joins (`count_allreduces`): each window-end
backward of its own completes only when the other rank all-reduces too, and once its loop is done it goes
on offering all-reduces of the same size until the learner's rank sends DONE (`run_learner_rank` does,
after train returns): a vector that no gradient is. Collectives are matched in order, so by then every
all-reduce the learner's rank made has been counted where the learner's code cannot write the count.

The learner's rank counts its own all-reduces per micro-batch too (`AllReduceLog`), for the verdict and to
say where they fell (verdicts.early_allreduces); how many there were is the grader's rank's count.
"""
# No `from __future__ import annotations` here: DDP checks a comm hook's annotations as objects.
import contextlib
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

from grader.learner.helper import start as start_helper
from grader.learner.helper import wait as wait_helper

DONE = 1e30  # every value of the learner's rank's last all-reduce; no gradient of these tasks comes near it


def is_done(contribution: torch.Tensor) -> bool:
    return bool(torch.all((contribution - DONE).abs() <= 1e-3 * DONE))


def join_group(store: str, rank: int, world: int, timeout_s: float) -> None:
    """Join the gloo group through a file:// store (no TCP rendezvous), over the sandbox's loopback."""
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # the sandbox's only interface; spares gloo's hostname lookup
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s))


# --- the grader's rank ------------------------------------------------------------------------------------

def start_grader_rank(count: Callable[[dict[str, Any], str, dict[str, Any]], None],
                      extra: dict[str, Any]) -> dict[str, Any]:
    """From prepare(): fork the grader's rank. It asks the referee for the run's seeds, calls
    `count(report, store, told)`, and sends the report (the counts, plus `extra`'s fields as `count` filled
    them); a group that failed because of what the learner's rank did is said in `report["error"]`."""
    store = os.path.join(tempfile.mkdtemp(), "store")

    def run(channel: Any) -> None:  # grader.learner.helper's channel
        told = channel.ask({"op": "data"})  # the run's seed for the model, and this rank's data
        report = {"allreduces": 0, "finished": False, "done": False, "error": None, **extra}
        try:
            count(report, store, told)
        except Exception as exc:  # noqa: BLE001 - said in the report
            report["error"] = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        channel.ask({"op": "report", "report": report})

    return {"store": store, "pid": start_helper(run)}


def count_allreduces(report: dict[str, Any], ddp: DistributedDataParallel, loop: Callable[[Callable[[], bool]], bool],
                     size: int, timeout_s: float) -> None:
    """Run the grader's correct `loop(stopped)` on a thread, counting each all-reduce the learner's rank
    joins into `report["allreduces"]`. The loop calls `stopped()` after each micro-batch and returns early
    when it is true (the learner's rank has finished), else returns True once every window is done; then
    all-reduces of `size` values are offered until DONE, each one more than a correct loop makes."""
    ended, failed = threading.Event(), []

    def counted(total: torch.Tensor, own: torch.Tensor) -> None:
        if is_done(total - own):
            report["done"] = True
            ended.set()
        else:
            report["allreduces"] += 1

    # DDP's all-reduce (its default hook's average), counted
    def hook(state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        buffer = bucket.buffer().div_(dist.get_world_size())
        own = buffer.clone()

        def average(future: torch.futures.Future) -> torch.Tensor:
            counted(future.value()[0], own)
            return future.value()[0]

        return dist.all_reduce(buffer, async_op=True).get_future().then(average)

    ddp.register_comm_hook(None, hook)

    def run() -> None:
        try:
            if not loop(lambda: report["done"]):
                return
            report["finished"] = True
            flat = torch.zeros(size)
            while not report["done"]:
                own = flat.zero_().clone()
                dist.all_reduce(flat)
                counted(flat, own)
        except Exception as exc:  # noqa: BLE001 - reported
            failed.append(exc)
        finally:
            ended.set()

    threading.Thread(target=run, daemon=True).start()
    if not ended.wait(timeout_s):
        report["error"] = f"the other process did not finish its all-reduces within {timeout_s} s"
    elif failed and not report["done"]:
        raise failed[0]


def accumulate_windows(ddp: DistributedDataParallel, micro_batches: list[tuple[torch.Tensor, torch.Tensor]],
                       windows: list[list[int]], loss_fn: Callable[..., torch.Tensor],
                       stopped: Callable[[], bool], end_window: Callable[[], None],
                       backward: Callable[[torch.Tensor], None] = torch.Tensor.backward) -> bool:
    """The grader's rank's correct accumulation: each window's losses divided by its length, `backward` on
    each (DDP all-reduces only at the window's last micro-batch: the others run under no_sync), then
    `end_window()` (the step). False as soon as `stopped()` (after any micro-batch), else True at the end."""
    for window in windows:
        for i in window:
            x, y = micro_batches[i]
            with ddp.no_sync() if i != window[-1] else contextlib.nullcontext():
                backward(loss_fn(ddp(x), y) / len(window))
            if stopped():
                return False
        end_window()
    return True


# --- the learner's rank -----------------------------------------------------------------------------------

class AllReduceLog:
    """The all-reduces of the learner's rank, per micro-batch (while it was the latest forward)."""

    def __init__(self, model: torch.nn.Module, ddp: DistributedDataParallel, micro_batches: int) -> None:
        self.forwards = 0
        self.per_micro_batch = [0] * micro_batches
        model.register_forward_pre_hook(self._forward)
        ddp.register_comm_hook(None, self._hook)

    def _forward(self, module: torch.nn.Module, args: tuple) -> None:
        self.forwards += 1

    def _hook(self, state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        if 0 < self.forwards <= len(self.per_micro_batch):
            self.per_micro_batch[self.forwards - 1] += 1
        return allreduce_hook(state, bucket)


def run_learner_rank(grader: dict[str, Any], rank: int, world: int, timeout_s: float, size: int,
                     train: Callable[[], tuple[dict[str, Any], Any]]) -> tuple[dict[str, Any], bool]:
    """Join the group, `train()` (-> the report, and what must stay alive until DONE), send DONE and wait
    for the grader's rank: (the report, whether the grader's rank exited in time)."""
    report, keep = {"rank": rank}, None
    try:
        join_group(grader["store"], rank, world, timeout_s)
        report, keep = train()
    except Exception:  # noqa: BLE001 - the group itself failed (not the learner's call): say what
        report = {"rank": rank, "failed": traceback.format_exc(limit=-2)[-2000:]}
    finally:
        if dist.is_initialized():
            try:
                dist.all_reduce(torch.full((size,), DONE))  # after this, the grader's rank reports
            except Exception:  # noqa: BLE001 - the grader's rank is gone or the group broke: its report says so
                pass
        finished = wait_helper(grader["pid"], 2 * timeout_s)
    del keep
    return report, finished
