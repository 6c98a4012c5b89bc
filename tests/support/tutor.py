"""The tutor's tests (tests/tutor, tests/browser/test_tutor.py): the real embedded model server, a server that
never answers, the step they ask about, a copy of the instance graded once per run (tests/tutor/conftest.py:
graded), and what a streamed answer holds."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

from tests.support.paths import EXERCISES
from tests.support.processes import free_port, stop_group

LESSON = "mixed-precision"
STEP = "amp-step"
ASK = f"/api/tutor/{LESSON}/{STEP}"
# A typical mistake (the course's own): backward on the raw loss; the check scaled-backward fails on line 11.
RAW_BACKWARD = (EXERCISES / LESSON / STEP / "mistakes" / "raw_backward.py").read_text()
# Short answers: each test needs the answer to exist and stream, not to be long (one CPU thread, ~10 tokens/s).
TEST_MAX_TOKENS = 24


class TutorModelServer:
    """`transformers serve` with the embedded SmolLM2 model on one CPU thread, offline; one per test session
    (tests/conftest.py: tutor_model), since loading it takes most of a minute on a busy machine."""

    def __init__(self, folder: Path):
        from academy.tutor import embedded

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = folder / "tutor-model.log"
        env = embedded.environment(threads=1)
        env["HF_HOME"] = str(folder / "hf-home")  # an empty cache: the model can only come from the package
        self.process = subprocess.Popen(embedded.command(self.port), env=env, stdout=open(self.log_path, "wb"),
                                        stderr=subprocess.STDOUT, start_new_session=True)

    @classmethod
    def running(cls, port: int) -> TutorModelServer:
        """One already started (`python -m academy.tutor.embedded --port PORT`), which this one never stops."""
        server = cls.__new__(cls)
        server.port, server.url, server.process = port, f"http://127.0.0.1:{port}/v1", None
        server.log_path = Path(os.devnull)
        return server

    def wait_ready(self, timeout: float = 300) -> TutorModelServer:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=5) as answer:
                    if b'"loaded"' in answer.read():
                        return self
            except OSError:
                pass
            if (self.process is not None and self.process.poll() is not None) or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the tutor's model server did not start:\n{self.logs()}")
            time.sleep(0.5)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop_group(self.process, timeout=10)


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A port whose server accepts connections and never answers: a model server that hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def copy_graded(graded: Path, target: Path) -> tuple[Path, str]:
    """A copy of the graded instance, and the guest's session cookie in it."""
    shutil.copytree(graded, target)
    return target, (graded.parent / "cookie").read_text()


def events(response: Any) -> list[tuple[str, Any]]:
    """The server-sent events of a streamed answer (a response, or its text), in order, as (name, data)."""
    text = response if isinstance(response, str) else response.get_data(as_text=True)
    found = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            found.append((lines["event"], json.loads(lines["data"])))
    return found


def answer_text(found: list[tuple[str, Any]]) -> str:
    return "".join(data["text"] for name, data in found if name == "token")
