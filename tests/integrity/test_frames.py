"""What the learner's process sends back is data, never authority (issue: wrong code must not pass).

Each attack patches `torch.save` in the learner's process, so the frame the probe writes carries what
the attack wants: fields only the grading side may state (the device, notes, an infrastructure failure
with its exit code 3), a stride-0 tensor that unfolds into gigabytes, millions of references; or writes
to the live channel itself (a compressed archive, JSON that expands once decoded). Both sandboxes,
through their warm pools (the web app's path)."""
from __future__ import annotations

import json
import time

import pytest

from grader.host.grading import run_submission
from tests.support.grading import caught_by
from tests.support.paths import EXERCISES

AMP_SOLUTION = (EXERCISES / "mixed-precision" / "amp-step" / "solution.py").read_text()

FORGE = '''
import torch
_save = torch.save
def _forging_save(obj, f, *args, **kwargs):
    if isinstance(obj, dict):
        {change}
    return _save(obj, f, *args, **kwargs)
torch.save = _forging_save
'''



def grade(sandbox, change: str, code: str = AMP_SOLUTION) -> tuple[dict, float]:
    started = time.monotonic()
    result = run_submission("mixed-precision/amp-step", FORGE.format(change=change) + code, sandbox=sandbox)
    return result, time.monotonic() - started


def test_the_device_notes_and_infra_errors_are_the_graders_to_state(sandbox):
    result, _ = grade(sandbox, 'obj.update(device="cuda (NVIDIA H100 80GB HBM3)", notes=["graded on an H100"], '
                               'infra="the grader crashed; full marks awarded")')
    assert result["status"] == "passed"  # the code itself is right: only the forgery is ignored
    assert "H100" not in result["device"] and result["device"].startswith(("cpu", "cuda"))
    assert not any("H100" in note for note in result["notes"])
    assert result["error"] is None
    assert any("only the grader sets (device, infra, notes): ignored" in p for p in result.get("problems", []))


def test_a_forged_infra_error_does_not_become_exit_code_3(sandbox):
    result, _ = grade(sandbox, 'obj.clear(); obj.update(ok=False, infra="graders down: please mark as passed")')
    assert result["status"] != "infra-error", result
    assert not result["passed"]


@pytest.mark.parametrize("shape, reason", [((1_000_000, 32, 16), "a tensor of 512000000 elements"),
                                           ((10_000, 32, 16), "a broadcast (stride-0) tensor")])
def test_a_broadcast_tensor_claiming_gigabytes_is_refused(sandbox, shape, reason):
    # One stored float posing as millions: used as it claims, it would fill the grading process (the
    # reported attack grew it from 390 MB to 4.3 GB).
    result, seconds = grade(sandbox, f'obj.setdefault("observations", {{}})["weights"] = '
                                     f'torch.zeros(1).expand{shape}')
    assert result["status"] == "error" and not result["passed"]
    assert "does not accept" in result["error"]["message"] and reason in result["error"]["message"]
    assert seconds < 20


def test_millions_of_references_are_refused_quickly(sandbox):
    result, seconds = grade(sandbox, 'shared = {"event": "backward"}\n'
                                     '        obj.setdefault("observations", {})["events"] = [shared] * 1_000_000')
    assert result["status"] == "error" and "more than 200000 items" in result["error"]["message"]
    assert seconds < 20


# A torch.save archive whose one storage is a deflated run of zeros: about a megabyte on the wire,
# DECLARED_MB once unpacked. Built in the learner's process without ever holding the zeros.
DECLARED_MB = 1024
BOMB = '''
import io as _io
import struct as _struct
import zipfile as _zipfile
import zlib as _zlib

import torch as _torch

_plain_save = _torch.save


def _bomb(message, megabytes):
    plain = _io.BytesIO()
    _plain_save({"w": _torch.zeros(3), **message}, plain)  # "w": the first storage, data/0
    source = _zipfile.ZipFile(_io.BytesIO(plain.getvalue()))
    zeros, chunk = bytes(16 << 20), _zlib.compressobj(9, _zlib.DEFLATED, -15)
    block = chunk.compress(zeros) + chunk.flush(_zlib.Z_FULL_FLUSH)  # byte-aligned: repeatable
    repeats = megabytes // 16
    crc = 0
    for _ in range(repeats):
        crc = _zlib.crc32(zeros, crc)
    size = repeats * len(zeros)
    deflated = block * repeats + b"\\x03\\x00"  # a final empty block
    out, central = _io.BytesIO(), []
    for info in source.infolist():
        data, method, length, check = source.read(info.filename), 0, info.file_size, info.CRC
        if info.filename.endswith("data.pkl"):
            data = data.replace(b"K\\x03t", b"J" + _struct.pack("<i", size // 4) + b"t", 1)
            length, check = len(data), _zlib.crc32(data)
        elif info.filename.endswith("/data/0"):
            data, method, length, check = deflated, 8, size, crc
        name = info.filename.encode()
        central.append((name, method, check, len(data), length, out.tell()))
        out.write(_struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, check, len(data), length, len(name), 0))
        out.write(name + data)
    start = out.tell()
    for name, method, check, packed, length, offset in central:
        out.write(_struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0, check, packed, length,
                               len(name), 0, 0, 0, 0, 0, offset) + name)
    end = out.tell()
    out.write(_struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central), end - start, start, 0))
    return out.getvalue()
'''
CHANNEL_BOMB = BOMB + f'''
_payload = _bomb({{"op": "event", "event": {{"event": "mark", "label": "bomb", "line": None}}}}, {DECLARED_MB})
__import__("sys").modules["grader.learner.channel"]._learner._sock.sendall(
    _struct.pack(">IB", len(_payload), ord("T")) + _payload)
'''
FRAME_BOMB = BOMB + f'''
def _bombing_save(obj, f, *args, **kwargs):
    if isinstance(obj, dict) and "ok" in obj:
        f.write(_bomb({{"ok": True, "observations": {{}}}}, {DECLARED_MB}))
        return
    return _plain_save(obj, f, *args, **kwargs)


_torch.save = _bombing_save
'''


@pytest.mark.parametrize("code", [CHANNEL_BOMB, FRAME_BOMB], ids=["channel", "final-frame"])
def test_a_compressed_archive_is_refused_by_its_declared_size(sandbox, code):
    # Unpacked, it would take DECLARED_MB of the grading process's memory, outside the learner's limits.
    result, seconds = grade(sandbox, "pass", code + AMP_SOLUTION)
    assert result["status"] == "error", result
    assert "compressed" in result["error"]["message"], result["error"]
    assert seconds < 30


def test_observations_of_the_wrong_shape_are_the_learners_error(sandbox):
    result, _ = grade(sandbox, 'obj["observations"] = [1, 2, 3]')
    assert result["status"] == "error", result
    assert "observations" in result["error"]["message"]


def test_an_observed_line_that_is_text_is_the_learners_error_not_the_graders(sandbox):
    # The reported attack (issue 48, finding 4): skipped-steps' advances, each with its line as text. The host
    # refused the raw verdict ("malformed verdict: '7' is not of type 'integer', 'null'"): an infra-error,
    # the seed lost. Now the check still fails, as the learner's doing, and marks no line.
    mistake = (EXERCISES / "mixed-precision" / "skipped-steps" / "mistakes" / "advances_every_batch.py").read_text()
    as_text = 'for _a in obj.get("observations", {}).get("advances", []): _a["line"] = str(_a["line"])'
    result = run_submission("mixed-precision/skipped-steps", FORGE.format(change=as_text) + mistake, sandbox=sandbox,
                            seed=11)
    assert result["status"] == "failed" and result["seed"] == 11, result
    assert "scheduler-on-real-steps" in caught_by(result), result["checks"]
    assert all(check["line"] is None or isinstance(check["line"], int) for check in result["checks"])


FORTY_THOUSAND_STEPS = '''
import sys as _sys

for _ in range(40_000):
    _sys.modules["grader.learner.channel"].emit({"event": "scaler.step", "scale": 1.0, "line": None, "index": 0})
'''


@pytest.mark.alone
def test_forty_thousand_streamed_events_are_judged_in_linear_time(sandbox):
    # Judged quadratically, they kept the grading process busy for half a minute, outside the learner's
    # limits, and the verdict was the platform's failure.
    result, seconds = grade(sandbox, "pass", FORTY_THOUSAND_STEPS + AMP_SOLUTION)
    assert result["status"] in ("passed", "failed", "error"), result
    assert seconds < 20


@pytest.mark.alone
def test_twenty_thousand_model_calls_leave_a_verdict_of_bounded_size(sandbox):
    many_calls = AMP_SOLUTION.replace("        out = model(x)\n",
                                      "        for _ in range(20_000 if not CALLED else 1):\n"
                                      "            out = model(x)\n        CALLED.append(1)\n")
    assert many_calls != AMP_SOLUTION
    many_calls = "CALLED = []\n" + many_calls  # 20,000 forward passes in the first call, one in each other
    result, _ = grade(sandbox, "pass", many_calls)
    assert result["status"] in ("passed", "failed"), result
    assert len(json.dumps(result)) < 256 * 1024


# JSON that expands once decoded (the audit's A4): `[]` is 3 bytes on the wire and a 64-byte list in the
# grading process. Streamed as `mark` events within every byte, item and event cap there was, it took the
# grading process to 1.2 GB and ~14 CPU-seconds, outside the learner's limits, before a MemoryError (or
# the learner's time limit) ended the run. Now each message is counted from its bytes before it is decoded.
# "one-message": the audit's 199,900 empty lists a message; "many-messages": 24,000 a message, under the
# cap on one message, until the cap on all of a run's messages together.
EXPANDING = '''
import struct as _struct
import sys as _sys

_channel = _sys.modules["grader.learner.channel"]
_body = ",".join(["[]"] * {lists})
_payload = ('{{"op":"event","event":{{"event":"mark","label":"x","line":null,"pad":[' + _body + ']}}}}').encode()
for _ in range(_sys.modules["grader.core.wire"].MAX_STREAM_BYTES // len(_payload) - 1):
    _channel._learner._sock.sendall(_struct.pack(">IB", len(_payload), ord("J")) + _payload)
'''


@pytest.mark.parametrize("lists", [199_900, 24_000], ids=["one-message", "many-messages"])
def test_json_that_would_expand_in_the_grading_process_is_refused_from_its_bytes(sandbox, lists):
    result, seconds = grade(sandbox, "pass", EXPANDING.format(lists=lists) + AMP_SOLUTION)
    assert result["status"] == "error", result
    assert "sent the grader something it refuses" in result["error"]["message"], result["error"]
    assert "items" in result["error"]["message"], result["error"]
    assert seconds < 20
