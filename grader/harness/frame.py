"""What the learner's process sends back, checked before the grading side touches it.

The frame is written by code that ran next to the learner's, so it is untrusted data: it may claim
fields only the grading side sets (device, notes, an infrastructure failure), hold tensors that unfold
into gigabytes (a stride-0 view claiming shape (1e6, 32, 16) is one stored number) or millions of
references to one object. `check_frame` keeps what the probe may send, says what it dropped, and
refuses anything over these bounds with a FrameError the verdict reports as the learner's doing.
"""
from __future__ import annotations

from typing import Any

import torch

FIELDS = {"ok", "observations", "error", "stage"}  # everything else is the grading side's to state
MAX_ITEMS = 200_000  # containers and leaves together; the course's largest frame has ~20k (fix-underflow)
MAX_DEPTH = 40
MAX_TENSOR_ELEMENTS = 8_000_000
MAX_TOTAL_ELEMENTS = 32_000_000


class FrameError(ValueError):
    """The frame is over a bound or malformed: the learner's doing (its process sent it)."""


def check_frame(message: Any) -> tuple[dict[str, Any], list[str]]:
    """(the frame with only its own fields, notes for the instructor about what was dropped)."""
    if not isinstance(message, dict):
        raise FrameError("not a mapping")
    dropped = sorted(str(key) for key in message if key not in FIELDS)
    notes = [f"the learner's process sent fields only the grader sets ({', '.join(dropped)}): ignored"] \
        if dropped else []
    kept = {key: message[key] for key in FIELDS if key in message}
    check_value(kept)
    return kept, notes


def check_value(value: Any) -> None:
    """Raise FrameError when `value` (a frame, or one message of the live channel) is over a bound."""
    items, elements = 0, 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:  # every reference counts, so a shared object or a cycle cannot hide its size
        node, depth = stack.pop()
        items += 1
        if items > MAX_ITEMS:
            raise FrameError(f"more than {MAX_ITEMS} items")
        if depth > MAX_DEPTH:
            raise FrameError(f"nested deeper than {MAX_DEPTH}")
        if isinstance(node, torch.Tensor):
            elements += _check_tensor(node)
            if elements > MAX_TOTAL_ELEMENTS:
                raise FrameError(f"tensors with more than {MAX_TOTAL_ELEMENTS} elements in all")
        elif isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
            stack.extend((k, depth + 1) for k in node)
        elif isinstance(node, (list, tuple)):
            stack.extend((v, depth + 1) for v in node)


def _check_tensor(tensor: torch.Tensor) -> int:
    if tensor.layout != torch.strided or tensor.is_quantized or tensor.is_nested:
        raise FrameError(f"a {tensor.layout} tensor")
    numel = tensor.numel()
    if numel > MAX_TENSOR_ELEMENTS:
        raise FrameError(f"a tensor of {numel} elements")
    if numel > 1 and any(stride == 0 and size > 1 for size, stride in zip(tensor.shape, tensor.stride())):
        raise FrameError(f"a broadcast (stride-0) tensor of shape {tuple(tensor.shape)}")
    if numel and tensor.untyped_storage().nbytes() < numel * tensor.element_size() and not tensor.is_contiguous():
        raise FrameError(f"a tensor view larger than its storage, shape {tuple(tensor.shape)}")
    return numel
