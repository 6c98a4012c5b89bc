"""Rank 0 of the gloo group: the grading side's own code, forked by the probe's prepare() before the
learner's code is loaded (grader/harness/helper.py), reporting on a channel of its own (referee.py).

It runs a correct clipped accumulation loop on micro-batches drawn by the grading side, through its own
DistributedDataParallel and GradScaler, and counts every gradient all-reduce the learner's rank joins,
as ddp-accumulate's other rank does: each window-end backward of its own completes only when the other
rank all-reduces too, and once its loop is done it goes on offering all-reduces of the same size,
counting each one the learner's rank joins, until the learner's rank sends DONE (probe.py does, after
train returns): a vector that no gradient is. After each window it records its weights and the norm of
the gradient DDP gave it, unscaled, before its own clipping: both ranks hold that same all-reduced
gradient, so it is also the norm the learner's rank had to clip, measured where the learner's code
cannot write.
"""
import contextlib
import os
import threading
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import scenario

DONE = 1e30  # every value of the learner's rank's last all-reduce; no gradient of this task comes near it


def is_done(contribution: torch.Tensor) -> bool:
    return bool(torch.all((contribution - DONE).abs() <= 1e-3 * DONE))


def run(channel, store: str) -> None:
    told = channel.ask({"op": "data"})  # the run's seed for the model, and this rank's data, drawn by the grader
    report = {"allreduces": 0, "finished": False, "done": False, "error": None, "weights": [], "synced_norms": []}
    try:
        _count(report, store, told["model_seed"], told["seed"])
    except Exception as exc:  # noqa: BLE001 - what the learner's rank did made the group fail: said in the report
        report["error"] = _first_line(exc)
    channel.ask({"op": "report", "report": report})


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def _count(report: dict, store: str, seed: int, data_seed: int) -> None:
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=scenario.GRADER_RANK,
                            world_size=scenario.WORLD, timeout=timedelta(seconds=scenario.TIMEOUT_S))
    model, optimizer, loss_fn = scenario.build_model(seed)
    ddp = DistributedDataParallel(model)
    scaler = scenario.make_scaler()
    micro_batches = scenario.micro_batches(data_seed)
    ended, failed = threading.Event(), []

    def counted(total: torch.Tensor, own: torch.Tensor) -> None:
        if is_done(total - own):
            report["done"] = True
            ended.set()
        else:
            report["allreduces"] += 1

    def hook(state, bucket):  # DDP's all-reduce (its default hook's average), counted
        buffer = bucket.buffer().div_(scenario.WORLD)
        own = buffer.clone()

        def average(future):
            counted(future.value()[0], own)
            return future.value()[0]

        return dist.all_reduce(buffer, async_op=True).get_future().then(average)

    ddp.register_comm_hook(None, hook)

    def loop() -> None:
        try:
            optimizer.zero_grad()
            for window in scenario.windows():
                for i in window:
                    x, y = micro_batches[i]
                    with ddp.no_sync() if i != window[-1] else contextlib.nullcontext():
                        scaler.scale(loss_fn(ddp(x), y) / len(window)).backward()
                    if report["done"]:
                        return
                scaler.unscale_(optimizer)  # once, after the window's last backward: DDP has all-reduced
                report["synced_norms"].append(scenario.grad_norm(model))
                torch.nn.utils.clip_grad_norm_(model.parameters(), scenario.MAX_NORM)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
                report["weights"].append(scenario.params(model))
            report["finished"] = True
            # Every all-reduce the learner's rank makes from now on is one more than a correct loop's.
            flat = torch.zeros(sum(p.numel() for p in model.parameters()))
            while not report["done"]:
                own = flat.zero_().clone()
                dist.all_reduce(flat)
                counted(flat, own)
        except Exception as exc:  # noqa: BLE001 - reported
            failed.append(exc)
        finally:
            ended.set()

    threading.Thread(target=loop, daemon=True).start()
    if not ended.wait(scenario.TIMEOUT_S):
        report["error"] = f"the other process did not finish its all-reduces within {scenario.TIMEOUT_S} s"
    elif failed and not report["done"]:
        raise failed[0]
