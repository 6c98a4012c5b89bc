"""What the learner's process sends the grading process, as bytes: the two wire formats both ends speak.

* The live channel (the learner's end grader/learner/channel.py, the grading side's grader/harness/channel.py):
  a 4-byte length, a 1-byte kind (J: JSON, T: torch.save for messages that hold tensors), the payload; and
  the bounds the grading side holds every run's messages to.
* The result frame: what a job's `run()` returns (grader/learner/entry.py), torch.save of one mapping with
  FRAME_FIELDS: {"ok": True, "observations": {...}} or {"ok": False, "error": {kind, message, line},
  "stage": "load" | "run"}, each with "emulated" (whether the run used the CUDA emulation: grader/learner/
  emulation.py); the grading side reads it with grader/harness/frame.py.
"""
from __future__ import annotations

import socket
import struct

MAX_MESSAGE_BYTES = 8 * 1024 * 1024  # one event (accumulate-amp's carry a small model's grads and weights)
MAX_STREAM_BYTES = 64 * 1024 * 1024  # all messages of one run together (as sandbox/jail/jail.py RESULT_CAP)
MAX_EVENTS = 50_000  # fix-underflow, the longest run, streams ~2,000
# Items (containers, keys and values; of a pickle, its instructions) counted from the bytes before decoding;
# the costliest kinds measured hold at most ~82 bytes an item once decoded (a pickle's empty dicts; JSON's
# one-key dicts 64, `[]` 32). Measured over `grader validate` (December 2026): the largest message, an
# accumulate-amp `optimizer.grads` event, counts 292; the largest run (fix-underflow) 31,615 in all; 20,000
# forward calls with their amendments 480k (tests/integrity/test_frames.py).
MAX_MESSAGE_ITEMS = 50_000  # ~4 MB once decoded
MAX_STREAM_ITEMS = 1_000_000  # all messages of one run together: ~80 MB at most once decoded
FRAME_FIELDS = frozenset({"ok", "observations", "error", "stage", "emulated"})  # everything else is the grading side's
HEADER = struct.Struct(">IB")



def recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the other side closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
