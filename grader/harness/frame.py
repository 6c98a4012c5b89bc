"""What the learner's process sends back, checked before the grading side touches it.

The frame is written by code that ran next to the learner's, so it is untrusted data: it may claim
fields only the grading side sets (device, notes, an infrastructure failure), hold tensors that unfold
into gigabytes (a stride-0 view claiming shape (1e6, 32, 16) is one stored number), millions of
references to one object, or numbers no float holds. `check_frame` keeps what the probe may send, says
what it dropped, and refuses anything over these bounds with a FrameError the verdict reports as the
learner's doing.

Before any of that, the bytes themselves: a torch.save archive is a zip, and a zip entry may be
compressed, so a megabyte on the wire can declare a gigabyte that torch.load would unpack in the
grading process. `load` reads the archive's directory first (`check_archive`) and loads only archives
whose entries are stored as torch.save writes them, uncompressed, each no larger than what was sent.
"""
from __future__ import annotations

import io
import zipfile
from typing import Any

import torch

FIELDS = {"ok", "observations", "error", "stage"}  # everything else is the grading side's to state
MAX_ITEMS = 200_000  # containers and leaves together; the course's largest frame has ~20k (fix-underflow)
MAX_DEPTH = 40
MAX_TENSOR_ELEMENTS = 8_000_000
MAX_TOTAL_ELEMENTS = 32_000_000
MAX_ENTRIES = MAX_ITEMS  # entries of one archive: one per storage, plus torch.save's own five
LARGEST_INT = 2**63  # a JSON or pickled int the grading side accepts is below this in size


class FrameError(ValueError):
    """The frame is over a bound or malformed: the learner's doing (its process sent it)."""


def check_archive(payload: bytes) -> None:
    """Raise FrameError unless `payload` is a zip whose every entry is stored uncompressed (torch.save's
    way) and declares no more bytes than it occupies: then nothing torch.load allocates for it is larger
    than the payload itself. Read before any entry is unpacked."""
    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise FrameError(f"not a torch.save archive ({exc})") from None
    if len(entries) > MAX_ENTRIES:
        raise FrameError(f"an archive of more than {MAX_ENTRIES} entries")
    declared = 0
    for entry in entries:
        if entry.compress_type != zipfile.ZIP_STORED or entry.file_size != entry.compress_size:
            raise FrameError(f"a compressed archive entry ({entry.filename!r} declares {entry.file_size} bytes "
                             f"in {entry.compress_size}); torch.save stores its entries uncompressed")
        declared += entry.file_size
    if declared > len(payload):
        raise FrameError(f"an archive declaring {declared} bytes in {len(payload)}")


def load(payload: bytes) -> Any:
    """torch.load of an archive the learner's process sent, once `check_archive` let it through; FrameError
    for anything unreadable."""
    check_archive(payload)
    try:
        return torch.load(io.BytesIO(payload), weights_only=True)
    except Exception as exc:  # noqa: BLE001 - anything unreadable is the learner's doing
        raise FrameError(f"an unreadable archive ({type(exc).__name__})") from None


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
        elif isinstance(node, int) and not -LARGEST_INT < node < LARGEST_INT:
            raise FrameError(f"a number too large for the grader (an integer of {node.bit_length()} bits)")


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
