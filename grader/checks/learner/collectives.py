"""The learner's own collectives on the default group, followed by the grader's rank (grader/checks/learner/ddp.py
has the two ranks): the learner's rank describes each one on a pipe before it makes it (`follow_collectives`, in
the learner's process) and the grader's rank, a fork of it made before the learner's code loaded, makes the same
one, contributing the learner's own tensors (`_Mirror`). Bounded: what the pipe says can only make the grader's
rank join collectives on the default group.
"""
# No `from __future__ import annotations` here, like ddp.py.
import inspect
import json
import math
import os
import struct
import threading
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

__all__ = ["GRADER_RANK", "LEARNER_RANK", "WORLD", "FOLLOWED_TEXT", "MAX_HEADER", "MAX_VALUES", "follow_collectives"]

GRADER_RANK, LEARNER_RANK, WORLD = 0, 1, 2  # the learner's is not rank 0: work done "on the main process" shows

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
