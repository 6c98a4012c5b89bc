"""What the learner's process sends back, checked before the grading side touches it.

The frame is written by code that ran next to the learner's, so it is untrusted data: it may claim
fields only the grading side sets (device, notes, an infrastructure failure), hold tensors that unfold
into gigabytes (a stride-0 view claiming shape (1e6, 32, 16) is one stored number), millions of
references to one object, or numbers no float holds. `check_frame` keeps what the probe may send, says
what it dropped, and refuses anything over these bounds with a FrameError the verdict reports as the
learner's doing.

Before any of that, the bytes themselves, read without decoding them: what a message costs the grading
process once decoded is bounded by what its bytes show.

* A torch.save archive is a zip, and a zip entry may be compressed, so a megabyte on the wire can declare
  a gigabyte that torch.load would unpack in the grading process. `load` reads the archive's directory
  first (`check_archive`) and loads only archives whose entries are stored as torch.save writes them,
  uncompressed, each no larger than what was sent.
* Its pickle is then read instruction by instruction without running it (`check_pickle`): only the
  instructions and globals torch.save writes for plain data (dicts, lists, tuples, strings, numbers,
  None, booleans, tensors) pass, a global is called only as torch.save calls it (a tensor's or a
  parameter's rebuild, an OrderedDict; a storage type only names a persistent storage), and at most
  `MAX_ITEMS` instructions, each of which makes at most one small object: one byte of pickle could
  otherwise make a 216-byte set, or `bytearray(10**9)` a gigabyte.
* A JSON message is counted from its bytes (`json_items`): every container, key and value but the first
  follows one of `[ { , :`, so their count bounds what `json.loads` makes (`[]` is 3 bytes on the wire
  and 64 once decoded).

Each count is an upper bound on the items `check_value` counts once decoded, and the live channel adds
them up over a run (channel.MAX_STREAM_ITEMS), so what the grading process holds stays a small multiple
of the items it accepted, whatever the bytes were.
"""
from __future__ import annotations

import io
import pickletools
import zipfile
from typing import Any

import torch

from grader.core.wire import FRAME_FIELDS

MAX_ITEMS = 200_000  # containers and leaves together (of a pickle: its instructions); the course's largest
# frame has ~20k items, its pickle ~28k instructions (measured over `grader validate`, December 2026)
MAX_DEPTH = 40
MAX_TENSOR_ELEMENTS = 8_000_000
MAX_TOTAL_ELEMENTS = 32_000_000
MAX_ENTRIES = MAX_ITEMS  # entries of one archive: one per storage, plus torch.save's own five
LARGEST_INT = 2**63  # a JSON or pickled int the grading side accepts is below this in size


class FrameError(ValueError):
    """The frame is over a bound or malformed: the learner's doing (its process sent it)."""


def check_archive(payload: bytes, limit: int = MAX_ITEMS) -> int:
    """Raise FrameError unless `payload` is a zip whose every entry is stored uncompressed (torch.save's
    way) and declares no more bytes than it occupies, with one pickle that `check_pickle` lets through:
    then nothing torch.load allocates for it is larger than the payload itself, besides at most `limit`
    small objects. Read before any entry is unpacked or any of the pickle is run. Returns the pickle's
    count (`check_pickle`)."""
    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:
            entries = archive.infolist()
            if len(entries) > MAX_ENTRIES:
                raise FrameError(f"an archive of more than {MAX_ENTRIES} entries")
            declared = 0
            for entry in entries:
                if entry.compress_type != zipfile.ZIP_STORED or entry.file_size != entry.compress_size:
                    raise FrameError(f"a compressed archive entry ({entry.filename!r} declares {entry.file_size} "
                                     f"bytes in {entry.compress_size}); torch.save stores its entries uncompressed")
                declared += entry.file_size
            if declared > len(payload):
                raise FrameError(f"an archive declaring {declared} bytes in {len(payload)}")
            # torch.load reads `<folder>/data.pkl`, matching names without regard to case: exactly one entry
            # may be called so, and it is the one counted.
            pickles = [entry for entry in entries if entry.filename.lower().endswith("data.pkl")]
            if len(pickles) != 1:
                raise FrameError(f"an archive with {len(pickles)} pickles (torch.save writes one data.pkl)")
            data = archive.read(pickles[0])
    except FrameError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
        raise FrameError(f"not a torch.save archive ({exc})") from None
    return check_pickle(data, limit)


# What torch.save writes for plain data. Every instruction makes at most one object of a few dozen bytes
# (a BINUNICODE string: its own bytes besides) or one memo entry: no set, no bytes, no other global.
_PICKLE_VALUES = frozenset({"NONE", "NEWTRUE", "NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT",
                            "BINUNICODE", "EMPTY_LIST", "EMPTY_DICT", "EMPTY_TUPLE"})
_PICKLE_CALLS = frozenset({"torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_parameter",
                           "collections OrderedDict"})
_STORAGE_TYPES = frozenset(f"torch {name}Storage" for name in (
    "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool", "ComplexFloat",
    "ComplexDouble"))
_VALUE = "value"  # what the simulated stack holds: a value, a callable, a storage type, a persistent id
_STORAGE_TYPE = "storage type"
_PERSISTENT_ID = "persistent id"


def check_pickle(data: bytes, limit: int = MAX_ITEMS) -> int:
    """Read the pickle `data` without running it: raise FrameError unless it is made of what torch.save
    writes for plain data, each global used only as torch.save uses it, in at most `limit` instructions;
    return how many. The stack is simulated as torch's weights-only unpickler keeps it (a new list after
    each MARK), holding what kind of thing each entry is, so one of the three callables torch.save writes
    is only ever called by REDUCE and a storage type only ever names a persistent storage. (torch's own
    weights-only unpickler would call `bytearray(10**9)`: a gigabyte from 20 bytes.) What passes is then
    still checked by torch.load itself."""
    stack: list[Any] = []
    marks: list[list[Any]] = []
    memo: dict[object, Any] = {}  # keyed by the opcodes' arguments (ints in a well-formed pickle)
    count = 0

    def pop(n: int = 1) -> list[Any]:
        if len(stack) < n:
            raise FrameError("a malformed pickle (its stack runs out)")
        taken = stack[len(stack) - n:]
        del stack[len(stack) - n:]
        return taken

    def pop_mark() -> list[Any]:
        nonlocal stack
        if not marks:
            raise FrameError("a malformed pickle (no mark)")
        taken, stack = stack, marks.pop()
        return taken

    def values(items: list[Any], what: str) -> None:
        wrong = [item for item in items if item != _VALUE]
        if wrong:
            raise FrameError(f"a pickle that puts a {wrong[0]} into {what}")

    try:
        for op, arg, _ in pickletools.genops(data):
            count += 1
            if count > limit:
                raise FrameError(f"more than {limit} items (a pickle of more than {limit} instructions)")
            name = op.name
            if name in _PICKLE_VALUES:
                stack.append(_VALUE)
            elif name == "MARK":
                marks.append(stack)
                stack = []
            elif name in ("BINPUT", "LONG_BINPUT"):
                if not stack:
                    raise FrameError("a malformed pickle (memo of nothing)")
                memo[arg] = stack[-1]
            elif name in ("BINGET", "LONG_BINGET"):
                if arg not in memo:
                    raise FrameError("a malformed pickle (memo never made)")
                stack.append(memo[arg])
            elif name in ("TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"):
                items = pop_mark() if name == "TUPLE" else pop(int(name[-1]))
                wrong = [item for item in items if item not in (_VALUE, _STORAGE_TYPE)]
                if wrong:
                    raise FrameError(f"a pickle that puts a {wrong[0]} into a tuple")
                stack.append(_PERSISTENT_ID if _STORAGE_TYPE in items else _VALUE)
            elif name in ("APPEND", "APPENDS", "SETITEM", "SETITEMS"):
                items = pop_mark() if name.endswith("S") else pop(1 if name == "APPEND" else 2)
                values(items, "a container")
                if not stack or stack[-1] != _VALUE:
                    raise FrameError("a malformed pickle (a container that is not one)")
            elif name == "GLOBAL":
                if arg in _PICKLE_CALLS:
                    stack.append(arg)
                elif arg in _STORAGE_TYPES:
                    stack.append(_STORAGE_TYPE)
                else:
                    raise FrameError(f"a pickle naming {str(arg)[:60]!r}, which torch.save does not write for data")
            elif name == "REDUCE":
                values(pop(1), "a call's arguments")
                if not stack or stack[-1] not in _PICKLE_CALLS:
                    raise FrameError(f"a pickle that calls a {stack[-1] if stack else 'nothing'}")
                stack[-1] = _VALUE
            elif name == "BINPERSID":
                if pop(1) != [_PERSISTENT_ID]:
                    raise FrameError("a pickle whose persistent id names no storage type")
                stack.append(_VALUE)
            elif name == "PROTO":
                pass
            elif name == "STOP":
                values(pop(1), "its result")
                return count
            else:
                raise FrameError(f"a pickle instruction torch.save does not write for data ({name})")
    except FrameError:
        raise
    except Exception as exc:  # noqa: BLE001 - anything unreadable is the learner's doing
        raise FrameError(f"an unreadable pickle ({type(exc).__name__})") from None
    raise FrameError("an unreadable pickle (no STOP)")


def json_items(payload: bytes, limit: int = MAX_ITEMS) -> int:
    """An upper bound on the items (containers, keys and values) `json.loads` would make of `payload`, read
    from its bytes without decoding them: every item but the first follows one of `[ { , :` (those inside
    strings only add to the count; in UTF-16 or -32 each is still one byte of its own). FrameError past
    `limit`."""
    count = 1 + payload.count(b"[") + payload.count(b"{") + payload.count(b",") + payload.count(b":")
    if count > limit:
        raise FrameError(f"more than {limit} items (a JSON message of up to {count} containers, keys and values)")
    return count


def load(payload: bytes, limit: int = MAX_ITEMS) -> Any:
    """torch.load of an archive the learner's process sent, once `check_archive` let it through; FrameError
    for anything unreadable."""
    check_archive(payload, limit)
    return load_checked(payload)


def load_checked(payload: bytes) -> Any:
    """torch.load of an archive `check_archive` already let through."""
    try:
        return torch.load(io.BytesIO(payload), weights_only=True)
    except Exception as exc:  # noqa: BLE001 - anything unreadable is the learner's doing
        raise FrameError(f"an unreadable archive ({type(exc).__name__})") from None


def check_frame(message: Any) -> tuple[dict[str, Any], list[str]]:
    """(the frame with only its own fields, notes for the instructor about what was dropped)."""
    if not isinstance(message, dict):
        raise FrameError("not a mapping")
    dropped = sorted(str(key) for key in message if key not in FRAME_FIELDS)
    notes = [f"the learner's process sent fields only the grader sets ({', '.join(dropped)}): ignored"] \
        if dropped else []
    kept = {key: message[key] for key in sorted(FRAME_FIELDS) if key in message}
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
    numel: int = tensor.numel()
    if numel > MAX_TENSOR_ELEMENTS:
        raise FrameError(f"a tensor of {numel} elements")
    if numel > 1 and any(stride == 0 and size > 1 for size, stride in zip(tensor.shape, tensor.stride())):
        raise FrameError(f"a broadcast (stride-0) tensor of shape {tuple(tensor.shape)}")
    if numel and tensor.untyped_storage().nbytes() < numel * tensor.element_size() and not tensor.is_contiguous():
        raise FrameError(f"a tensor view larger than its storage, shape {tuple(tensor.shape)}")
    return numel
