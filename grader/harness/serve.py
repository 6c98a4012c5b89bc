"""The one harness entry: every sandbox starts this, in a container or as a local process.

    python -m grader.harness [--exercises DIR] [--hide PATH ...] [--confinement namespaces|container|none]

1. warms the imports a grading run needs (torch, its lazy optimizer imports, pytest, the harness) and
   prints the protocol's ready line on stdout;
2. reads ONE request line from stdin (grader/core/protocol.py), resolves its exercise id under the
   exercises folder (--exercises, else $DLA_EXERCISES, else the repository's), grades it;
3. prints the verdict line and exits. Never a second request: a process that ran learner code is gone.

    python -m grader.harness --fork-server FD [--exercises DIR] [--hide PATH ...]

warms once and then, for each message on the Unix socket FD, forks a child that does 2. and 3. on the
pipes it was sent (sandbox/forkserver.py): the local sandbox's warm processes. The fork server
itself never runs learner code.

    python -m grader.harness --preflight [--exercises DIR] [--hide PATH ...]

prints {"ok": ..., "problems": [...]}: what keeps this host from confining learner code with the
learner's view (sandbox/jail/preflight.py). The local sandbox asks it before it takes a submission.

stdout carries protocol lines only: everything else this process would print goes to stderr.
"""
from __future__ import annotations

import argparse
import os
import select
import sys
import time
from pathlib import Path
from typing import IO

from grader.core.course import CourseError, Exercise, load_exercise
from grader.core.protocol import ProtocolError, RawVerdict, Request, infra_error, ready_line
from grader.core.settings import exercises_root
from sandbox.jail import Confinement, Jail, in_container


def exercise_under(root: Path, exercise_id: str) -> Exercise:
    """The exercise `exercise_id` ("lesson/exercise") under `root`, refusing anything outside it."""
    parts = exercise_id.split("/")
    if len(parts) != 2 or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise ProtocolError(f"bad exercise id {exercise_id!r}")
    folder = root / parts[0] / parts[1]
    if not (folder / "exercise.yaml").is_file():
        raise ProtocolError(f"this grader has no exercise {exercise_id!r} under {root} "
                            f"(a grader image is rebuilt by sandbox/build-images)")
    try:
        return load_exercise(folder, exercise_id, authoring_files=False)
    except CourseError as exc:
        raise ProtocolError(f"the exercise files are broken: {exc}") from None


def read_request(stream: IO[bytes]) -> Request | None:
    """The one request, or None when stdin closed without one (a pool shutting down)."""
    from grader.core.protocol import MAX_REQUEST_BYTES

    line = stream.readline(MAX_REQUEST_BYTES + 1)
    if not line.strip():
        return None
    return Request.decode(line)


def serve_one(root: Path, hide: list[Path], confinement: Confinement, warm_s: float) -> int:
    """Steps 2 and 3 for this process's stdin/stdout (the imports are already warm).

    The jail (its zygote, the fork source of every learner process) is made first, before the request is
    read: a learner process is a copy of the zygote's memory and call stack, so it must be made while this
    process holds no exercise (hints), code, seed or reference, and no frame that will (issue 48)."""
    from grader.harness.grade import learner_jail

    # Keep a private copy of stdout for our lines; fd 1 (and sys.stdout) now lead to stderr. Before the
    # zygote: it keeps fds 0-2, and must never hold the protocol's stdout.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    with learner_jail(root, confinement, hide) as jail:
        out.write(ready_line(warm_s))
        out.flush()
        verdict = _answer(root, hide, confinement, jail)
        # Sent before the jail's zygote is stopped (its exit takes ~10-50 ms, measured: benchmarks/verdict_profile.py),
        # not after: the learner waits for this line. Every learner process of this verdict has already ended.
        if verdict is not None:
            out.write(verdict.encode())
            out.flush()
    return 0


def _answer(root: Path, hide: list[Path], confinement: Confinement, jail: Jail) -> RawVerdict | None:
    """The verdict for the one request on stdin (None when stdin closed without one)."""
    from grader.core.protocol import RequestKind
    from grader.harness.grade import run_for, verdict_for

    try:
        request = read_request(sys.stdin.buffer)
        if request is None:
            return None
        answer = run_for if request.kind is RequestKind.RUN else verdict_for
        return answer(exercise_under(root, request.exercise), request.code, confinement,
                      seed=request.seed, hide=hide, jail=jail)
    except ProtocolError as exc:
        return infra_error(f"The grader got a bad request: {exc}")
    except Exception as exc:  # noqa: BLE001 - reported as an infrastructure failure, never a crash
        import traceback

        traceback.print_exc()
        return infra_error(f"The grader itself failed: {type(exc).__name__}: {exc}")


def preflight(root: Path, hide: list[Path]) -> int:
    """Try the learner's confinement with the learner's view, without importing torch (~0.1 s)."""
    import json

    from grader.harness.view import learner_view
    from sandbox.jail.preflight import problems

    found = problems(learner_view(root, hide))
    print(json.dumps({"ok": not found, "problems": found}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.harness")
    parser.add_argument("--exercises", type=Path, help="the exercises folder (default: $DLA_EXERCISES)")
    parser.add_argument("--hide", action="append", type=Path, default=[],
                        help="a host path learner code must not see (repeatable)")
    parser.add_argument("--confinement", choices=[c.value for c in Confinement],
                        help="how learner code is confined (sandbox/jail/confinement.py; default: container "
                             "inside the grader image, else namespaces)")
    parser.add_argument("--fork-server", type=int, metavar="FD",
                        help="serve the local sandbox's warm pool over this Unix socket")
    parser.add_argument("--preflight", action="store_true",
                        help="print what keeps this host from confining learner code, then exit")
    args = parser.parse_args(argv)
    root = (args.exercises or exercises_root()).resolve()
    if args.preflight:
        return preflight(root, args.hide)
    confinement = Confinement(args.confinement) if args.confinement else \
        (Confinement.CONTAINER if in_container() else Confinement.NAMESPACES)
    started = time.monotonic()
    from grader.harness.grade import run_pytest_once, warm_up

    warm_up()
    # Every grading reads its exercise and bounds its verdict with JSON Schemas: jsonschema's import (~50 ms,
    # benchmarks/verdict_profile.py) is paid here, once per fork server, not by every child. A library only: no
    # exercise is read before the jail's zygote exists (serve_one).
    import jsonschema  # noqa: F401
    if args.fork_server is not None or not select.select([sys.stdin], [], [], 0)[0]:
        run_pytest_once()  # nobody is waiting yet (a warm process): get pytest's first session done now
    if args.fork_server is not None:
        from sandbox.forkserver import serve_forever

        return serve_forever(args.fork_server, lambda: serve_one(root, args.hide, confinement, 0.0))
    return serve_one(root, args.hide, confinement, time.monotonic() - started)


if __name__ == "__main__":
    sys.exit(main())
