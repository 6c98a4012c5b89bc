"""Two ranks of one real gloo group, for the DDP exercises: the grader's (rank 0) and the learner's (rank 1).
Runs in the learner's process (the probe's prepare() and probe()) and in the grader's rank, a fork of it made
before the learner's code loads; the referee's side is grader/checks/referee/ddp.py, the verdicts' words
grader/checks/grading/ddp.py.

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
import inspect
import json
import math
import os
import struct
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

GRADER_RANK, LEARNER_RANK, WORLD = 0, 1, 2  # the learner's is not rank 0: work done "on the main process" shows
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


# --- the learner's own collectives, followed ------------------------------------------------------------------

FOLLOWED = ("all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "all_gather_single", "reduce", "gather",
            "barrier")
NOT_FOLLOWED = ("scatter", "send", "recv", "isend", "irecv", "batch_isend_irecv", "all_to_all", "all_to_all_single",
                "reduce_scatter", "reduce_scatter_tensor", "reduce_scatter_single", "all_reduce_coalesced",
                "all_gather_coalesced", "monitored_barrier", "new_group", "new_subgroups",
                "new_subgroups_by_enumeration")
FOLLOWED_TEXT = ("the grader's process (rank 0) follows your own collectives on the default group made with "
                 "dist.all_reduce, broadcast, all_gather, all_gather_single, reduce, gather or barrier (and "
                 "the *_object ones built on them), contributing what your process contributes")
_NEW_GROUP = dist.new_group  # the probe's own groups are made with this; the learner's code gets the refusal
REDUCE_OPS = {name: getattr(dist.ReduceOp, name) for name in ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")}
DTYPES = {str(t): t for t in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                              torch.int16, torch.int8, torch.uint8, torch.bool)}
MAX_HEADER = 4096  # bytes of one collective's description
MAX_VALUES = 1 << 22  # bytes of the tensors one collective contributes (these models' gradients: under 2 KB)
MAX_COLLECTIVES = 10_000  # per run: beyond this the grader's rank stops following
_LENGTH = struct.Struct(">I")


def _reduce_name(op: Any) -> str:
    for name, value in REDUCE_OPS.items():
        if op == value:
            return name
    raise RuntimeError(f"{op}: {FOLLOWED_TEXT}, with ReduceOp SUM, PRODUCT, MIN, MAX, BAND, BOR or BXOR")


def _describe(name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[torch.Tensor]]:
    """What the grader's rank needs to make the same collective: (header, the tensors this rank contributes)."""
    header: dict[str, Any] = {"op": name}
    if name == "barrier":
        return header, []
    single = name in ("all_gather_into_tensor", "all_gather_single")
    tensor = arguments.get("input_tensor" if single else "tensor")
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"dist.{name}: expected a tensor, got {type(tensor).__name__}")
    if name in ("all_reduce", "reduce"):
        header["reduce"] = _reduce_name(arguments.get("op", dist.ReduceOp.SUM))
    if name in ("broadcast", "reduce", "gather"):
        key = "src" if name == "broadcast" else "dst"
        root = arguments.get(key)
        header["root"] = root if root is not None else arguments.get(f"group_{key}")
    if single:
        header["out"] = list(arguments["output_tensor"].shape)
    return header, [tensor]


class _Pipe:
    """The learner's rank's end: one frame per collective (a length, a JSON header, then the raw tensors)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, header: dict[str, Any], tensors: list[torch.Tensor]) -> None:
        payloads = [t.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() for t in tensors]
        header = {**header, "tensors": [[str(t.dtype), list(t.shape)] for t in tensors]}
        text = json.dumps(header).encode()
        data = _LENGTH.pack(len(text)) + text + b"".join(payloads)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]
        except OSError as exc:
            raise RuntimeError(f"dist.{header['op']}: the grader's process (rank 0) no longer follows your "
                               f"process's own collectives ({exc.strerror or exc})") from None


def follow_collectives(fd: int, grad_group: dist.ProcessGroup) -> None:
    """In the learner's rank, before its code is called: every collective of torch.distributed's on the default
    group is first described to the grader's rank (which then makes it too); DDP's own group passes through
    untold; the collectives the grader's rank cannot follow raise, saying so."""
    pipe, inside = _Pipe(fd), threading.local()

    def followed(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)

        def collective(*args: Any, **kwargs: Any) -> Any:
            arguments = signature.bind(*args, **kwargs).arguments
            group = arguments.get("group")
            if group is grad_group or getattr(inside, "collective", False):
                # DDP's gradient all-reduce (it pairs with the grader's count), or one that a followed
                # collective makes itself (all_gather_into_tensor calls all_gather_single): told already
                return original(*args, **kwargs)
            if group is not None and group is not dist.group.WORLD:
                raise RuntimeError(f"dist.{name} on a group of your own: {FOLLOWED_TEXT}")
            pipe.send(*_describe(name, arguments))
            inside.collective = True
            try:
                return original(*args, **kwargs)
            finally:
                inside.collective = False

        return collective

    def refused(name: str) -> Callable[..., Any]:
        def collective(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"dist.{name}: {FOLLOWED_TEXT}; it cannot make this one with yours here")

        return collective

    for name in FOLLOWED + NOT_FOLLOWED:
        original = getattr(dist.distributed_c10d, name, None)
        if original is None:
            continue
        patched = followed(name, original) if name in FOLLOWED else refused(name)
        # distributed_c10d's own *_object functions call these through the module's globals
        setattr(dist.distributed_c10d, name, patched)
        setattr(dist, name, patched)


class _Mirror:
    """The grader's rank's end: reads each collective the learner's rank describes and makes the same one on the
    default group, contributing the learner's own tensors. Bounded: header, values, count; anything malformed
    ends the following, said in `report["collective_error"]`."""

    def __init__(self, fd: int, report: dict[str, Any]) -> None:
        self.fd, self.report = fd, report

    def _read(self, size: int) -> bytes | None:
        chunks, left = [], size
        while left:
            chunk = os.read(self.fd, min(left, 1 << 16))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _next(self) -> tuple[dict[str, Any], list[torch.Tensor]] | None:
        length = self._read(_LENGTH.size)
        if length is None:
            return None
        (size,) = _LENGTH.unpack(length)
        if size > MAX_HEADER:
            raise ValueError(f"a description of {size} bytes")
        header = json.loads(self._read(size) or b"null")
        if not isinstance(header, dict) or header.get("op") not in FOLLOWED:
            raise ValueError(f"an unknown collective ({str(header)[:80]})")
        specs, tensors, total = header.get("tensors"), [], 0
        if not isinstance(specs, list) or len(specs) > 1:
            raise ValueError("a collective of more than one tensor")
        for spec in specs:
            dtype, shape = DTYPES.get(spec[0]) if isinstance(spec, list) and spec else None, spec[1]
            if dtype is None or not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
                raise ValueError(f"a tensor described as {str(spec)[:80]}")
            size = math.prod(shape) * torch.empty((), dtype=dtype).element_size()  # counted before any allocation
            total += size
            if total > MAX_VALUES:
                raise ValueError(f"a tensor of more than {MAX_VALUES} bytes")
            data = self._read(size) if size else b""
            if data is None:
                return None
            tensors.append(torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape).clone()
                           if data else torch.empty(shape, dtype=dtype))
        return header, tensors

    @staticmethod
    def _root(header: dict[str, Any]) -> int:
        root = header.get("root")
        if root not in (GRADER_RANK, LEARNER_RANK):
            raise ValueError(f"dist.{header['op']} with root {root!r}, which is neither rank 0 nor rank 1")
        return int(root)

    def _make(self, header: dict[str, Any], tensors: list[torch.Tensor]) -> None:
        op = header["op"]
        if op == "barrier":
            dist.barrier()
            return
        (mine,) = tensors
        if op == "all_reduce":
            dist.all_reduce(mine, op=REDUCE_OPS[header.get("reduce", "SUM")])
        elif op == "broadcast":
            dist.broadcast(mine, src=self._root(header))
        elif op == "all_gather":
            dist.all_gather([torch.empty_like(mine) for _ in range(WORLD)], mine)
        elif op in ("all_gather_into_tensor", "all_gather_single"):
            out = header.get("out")
            if not isinstance(out, list) or not all(type(n) is int and n >= 0 for n in out) or \
                    torch.Size(out).numel() > WORLD * mine.numel():
                raise ValueError(f"dist.{op} into {str(out)[:40]}")
            dist.all_gather_single(torch.empty(out, dtype=mine.dtype), mine)
        elif op == "reduce":
            dist.reduce(mine, dst=self._root(header), op=REDUCE_OPS[header.get("reduce", "SUM")])
        elif op == "gather":
            root = self._root(header)
            dist.gather(mine, [torch.empty_like(mine) for _ in range(WORLD)] if root == GRADER_RANK else None, dst=root)

    def run(self) -> None:
        try:
            while self.report["collectives"] < MAX_COLLECTIVES:
                described = self._next()
                if described is None:
                    return
                self._make(*described)
                self.report["collectives"] += 1
            self.report["collective_error"] = f"more than {MAX_COLLECTIVES} collectives of its own"
        except Exception as exc:  # noqa: BLE001 - said in the report
            self.report["collective_error"] = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        finally:
            os.close(self.fd)


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
