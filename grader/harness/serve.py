"""One-request server mode of the harness: the entry point of every grading container.

    python -m grader.harness.serve

1. warms the imports a grading run needs (torch, its lazy optimizer imports, pytest, the harness) and
   prints `{"ready": true, ...}` as one line on stdout;
2. reads ONE request from stdin, a single JSON line `{"exercise": "lesson/exercise", "code": "...",
   "seed": 123}` (the exercise is looked up under $DLA_EXERCISES, the image's copy of the checks);
3. grades it with `grader.harness.main.grade`, prints the raw verdict as one JSON line and exits.

A warm-pool container sits in step 2 until it is handed a submission; a cold container gets its request
at once. Either way the process, and with it the container, ends after one submission. stdout carries
these two lines only: everything else this process would print goes to stderr.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import IO, Any

from grader.harness.main import MAX_CODE_BYTES, grade, warm_up

# JSON escaping can make code up to 6x longer (\uXXXX); anything beyond that is not a real request.
MAX_REQUEST_BYTES = 6 * MAX_CODE_BYTES + 4096


class RequestError(Exception):
    """The request on stdin is malformed: the caller's bug, reported as an infra-error."""


def read_request(stream: IO[bytes]) -> dict[str, Any] | None:
    """The one request line, or None when stdin closed without one (a pool shutting down)."""
    line = stream.readline(MAX_REQUEST_BYTES + 1)
    if not line.strip():
        return None
    if len(line) > MAX_REQUEST_BYTES:
        raise RequestError(f"request larger than {MAX_REQUEST_BYTES} bytes")
    try:
        request = json.loads(line)
    except ValueError as exc:
        raise RequestError(f"request is not JSON: {exc}") from None
    if not isinstance(request, dict) or not isinstance(request.get("exercise"), str) \
            or not isinstance(request.get("code"), str):
        raise RequestError("request needs string fields 'exercise' and 'code'")
    seed = request.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise RequestError("'seed' must be an integer")
    if len(request["code"].encode("utf-8", "surrogatepass")) > MAX_CODE_BYTES:
        raise RequestError(f"code larger than {MAX_CODE_BYTES} bytes")
    return request


def exercise_dir(root: Path, exercise: str) -> Path:
    """The folder of `exercise` ("lesson/exercise") under `root`, refusing anything outside it."""
    parts = exercise.split("/")
    if len(parts) != 2 or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise RequestError(f"bad exercise id {exercise!r}")
    folder = root / parts[0] / parts[1]
    if not (folder / "exercise.yaml").is_file():
        raise RequestError(f"this grader image has no exercise {exercise!r} (rebuild it: sandbox/build-images)")
    return folder


def _send(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message, default=str) + "\n")
    out.flush()


def main() -> int:
    started = time.monotonic()
    # Keep a private copy of stdout for our two lines; fd 1 (and sys.stdout) now lead to stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    warm_up()  # also freezes the imported objects out of the garbage collector's sight
    _send(out, {"ready": True, "warm_s": round(time.monotonic() - started, 3)})
    try:
        request = read_request(sys.stdin.buffer)
        if request is None:
            return 0
        root = Path(os.environ.get("DLA_EXERCISES", "/opt/grader/exercises"))
        verdict = grade(exercise_dir(root, request["exercise"]), request["code"], seed=request.get("seed"))
    except RequestError as exc:
        verdict = {"status": "infra-error", "error": {"kind": "infra", "line": None,
                                                      "message": f"The grader got a bad request: {exc}"}}
    except Exception as exc:  # noqa: BLE001 - reported as an infrastructure failure, never a crash
        import traceback

        traceback.print_exc()
        message = f"The grader itself failed: {type(exc).__name__}: {exc}"
        verdict = {"status": "infra-error", "error": {"kind": "infra", "line": None, "message": message}}
    _send(out, verdict)
    return 0


if __name__ == "__main__":
    sys.exit(main())
