"""A started entry process, however it was started, seen through the entry contract (sandbox/__init__.py).

`EntryProcess` reads the process's stdout on a thread (the ready line, then the reply) and keeps the
tail of its stderr; `answer()` hands over one request line and waits for the reply with a deadline.
Subclasses say only how the process is stopped and waited for: a local child (`PopenProcess`), a
fork-server child watched through a pidfd (sandbox/forkserver.py), a container (sandbox/docker.py).
"""
from __future__ import annotations

import queue
import subprocess
import threading
import time
from typing import IO, Callable

from sandbox import Ending, Reply, SandboxError, Work
from sandbox.settings import GRACE_S, REPLY_CAP, STARTUP_TIMEOUT_S, STDERR_CAP

_OVERSIZED = b"\0oversized"


class EntryProcess:
    """One single-use entry process: started, waits ready, takes one request, then it is gone."""

    what = "grading process"  # how messages name it

    def __init__(self, name: str, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes],
                 on_change: Callable[[EntryProcess], None] | None = None):
        """`on_change(self)` is called (from a reader thread) once when it is ready and once when its
        output ends."""
        self.name = name
        self.started = time.monotonic()
        self.ready_at: float | None = None
        self.ended = False
        self._stdin = stdin
        self._settled = threading.Event()  # ready, or ended before it was
        self._on_change = on_change
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: list[bytes] = []
        self._threads = [threading.Thread(target=self._read_stdout, args=(stdout,), daemon=True),
                         threading.Thread(target=self._read_stderr, args=(stderr,), daemon=True)]
        for thread in self._threads:
            thread.start()

    # -- what subclasses provide ---------------------------------------------------------------------
    def kill(self) -> None:
        """Stop the process now."""
        raise NotImplementedError

    def wait(self, timeout: float) -> int | None:
        """Its exit code once it has ended (killing it after `timeout`), None when unknown."""
        raise NotImplementedError

    def exit_reply(self, exit_code: int | None) -> Reply | None:
        """How a process that ended without a reply ended, when that was the work's doing (say, a
        container's memory limit); None means the sandbox failed."""
        return None

    # -- the protocol --------------------------------------------------------------------------------
    def _read_stdout(self, stream: IO[bytes]) -> None:
        """The ready line (the first), then reply lines; a line over REPLY_CAP ends the reading (and the process)."""
        buffer = b""
        while True:
            chunk = stream.read1(65536)  # type: ignore[attr-defined]
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if self.ready_at is None:
                    self.ready_at = time.monotonic()
                    self._settled.set()
                    self._notify()
                else:
                    self._lines.put(line)
            if len(buffer) > REPLY_CAP:
                self._lines.put(_OVERSIZED)
                self.kill()
                break
        stream.close()
        self.ended = True
        self._lines.put(None)
        self._settled.set()
        self._notify()

    def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change(self)

    def _read_stderr(self, stream: IO[bytes]) -> None:
        kept = 0
        while True:
            chunk = stream.read1(65536)  # type: ignore[attr-defined]
            if not chunk:
                break
            if kept < STDERR_CAP:
                self._stderr.append(chunk[:STDERR_CAP - kept])
                kept += len(self._stderr[-1])
        stream.close()

    def stderr_tail(self, size: int = 1500) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")[-size:]

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Block until the process has warmed its imports; SandboxError if it never does."""
        if not self._settled.wait(timeout):
            self.kill()
            raise SandboxError(f"the {self.what} did not start within {timeout:g} s")
        if self.ready_at is None:
            raise SandboxError(f"the {self.what} failed to start (exit {self.wait(10)}): {self.stderr_tail()}")

    def answer(self, work: Work) -> Reply:
        """Hand over the one request line and wait for the reply (then the process exits). A process still
        busy after the work's limit plus GRACE_S is stopped: the work ran out of time."""
        try:
            self._stdin.write(work.line if work.line.endswith(b"\n") else work.line + b"\n")
            self._stdin.close()
        except (BrokenPipeError, OSError):
            pass  # the process is gone: reported below as no reply
        self.wait_ready()
        try:
            line = self._lines.get(timeout=work.time_limit_s + GRACE_S)
        except queue.Empty:
            self.kill()
            return Reply(Ending.DEADLINE)
        if line == _OVERSIZED:
            raise SandboxError(f"the {self.what} printed an oversized reply")
        if line is None:
            code = self.wait(10)
            reply = self.exit_reply(code)
            if reply is None:
                raise SandboxError(f"the {self.what} exited {code} without a verdict: {self.stderr_tail()}")
            return reply
        return Reply(Ending.REPLIED, line)

    def close(self) -> None:
        """The process must be gone when this returns: wait for it, force it if needed."""
        try:
            if not self._stdin.closed:
                self._stdin.close()  # a waiting process reads end-of-input and exits
        except OSError:
            pass
        self.wait(10)
        for thread in self._threads:
            thread.join(timeout=5)


class PopenProcess(EntryProcess):
    """A grading process that is this process's own child (a cold local one, a container's client)."""

    def __init__(self, name: str, command: list[str], env: dict[str, str] | None = None,
                 on_change: Callable[[EntryProcess], None] | None = None):
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env, start_new_session=True)
        assert self.process.stdin and self.process.stdout and self.process.stderr
        super().__init__(name, self.process.stdin, self.process.stdout, self.process.stderr, on_change)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()

    def wait(self, timeout: float) -> int | None:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            try:
                return self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                return None
