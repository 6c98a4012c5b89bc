"""The docker sandbox: every submission is graded in a fresh, hardened, single-use container.

The container runs `python -m grader.harness.serve` from the grader image (sandbox/Dockerfile, built by
sandbox/build-images): it warms its imports, says it is ready, reads ONE request from stdin, grades it
and prints the raw verdict on stdout. Nothing of the host is mounted; the code goes in over stdin.

A warm pool (sandbox/pool.py) keeps such containers started and waiting; `DockerSandbox.run` takes one
from the pool this process started, if any, and otherwise starts a cold container for the submission.

Why the entry process is uid 0: it must drop the learner's child to a uid of its own (so learner code
can neither read the checks nor touch the grading process), which needs CAP_SETUID/CAP_SETGID, and
stop that child at its time limit, which needs CAP_KILL. Every other capability is dropped, the
learner's process loses these three when it changes uid, no-new-privileges is set, the root file
system is read-only.
"""
from __future__ import annotations

import json
import os
import queue
import random
import shutil
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from grader.course import Exercise
from sandbox import SandboxError
from sandbox.image import CONTENT_LABEL, CPU_IMAGE, CUDA_IMAGE, content_fingerprint

IMAGE_ENV = "DLA_GRADER_IMAGE"  # use this image instead of dla-grader:cpu / dla-grader:cuda
CONTAINER_LABEL = "dla.sandbox"  # every grading container carries it: `docker ps -a --filter label=...`
STARTUP_TIMEOUT_S = 60  # start + torch imports; generous because pool refills compete for the CPUs
CHECKS_GRACE_S = 20  # after the learner's time limit: the checks' own runs and the container's exit
VERDICT_CAP = 1024 * 1024
STDERR_CAP = 64 * 1024
GRADER_MEMORY_MB = 1024  # the grading side's own share (torch, pytest) on top of the exercise's limit
SCRATCH_MB = 64


def docker_binary() -> str | None:
    return shutil.which("docker")


def host_has_gpu() -> bool:
    """An NVIDIA GPU that containers can get with --gpus (driver + container toolkit installed)."""
    toolkit = ("nvidia-container-runtime-hook", "nvidia-container-cli", "nvidia-ctk")
    return Path("/dev/nvidiactl").exists() and any(shutil.which(tool) for tool in toolkit)


def image_labels(image: str) -> dict[str, str] | None:
    """The image's labels, or None when the engine does not have it (or does not answer)."""
    binary = docker_binary()
    if binary is None:
        return None
    try:
        proc = subprocess.run([binary, "image", "inspect", "-f", "{{json .Config.Labels}}", image],
                              capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        return None
    try:
        return json.loads(proc.stdout) or {}
    except ValueError:
        return {}


def image_ready(image: str) -> tuple[bool, str]:
    """(can grade with `image`?, why not): an engine answers, has it, and it holds these files."""
    if docker_binary() is None:
        return False, "the docker command is not installed"
    labels = image_labels(image)
    if labels is None:
        return False, f"no Docker Engine answers or it has no image {image} (run sandbox/build-images)"
    if labels.get(CONTENT_LABEL) != content_fingerprint():
        return False, (f"the image {image} was built from other grader or exercise files than these "
                       f"(run sandbox/build-images)")
    return True, ""


@dataclass(frozen=True)
class ContainerSpec:
    """How a grading container is started: which image, with what limits."""
    image: str
    memory_mb: int
    gpus: bool = False
    cpus: float = 1.0
    pids: int = 256

    def command(self, name: str) -> list[str]:
        memory = f"{self.memory_mb}m"
        flags = [
            "run", "-i", "--rm", "--name", name, "--label", f"{CONTAINER_LABEL}=grader",
            "--network", "none", "--read-only", "--hostname", "grader",
            # learner scratch (shared /tmp, a private 0700 folder each) and the grading side's own
            "--tmpfs", f"/tmp:rw,nosuid,nodev,noexec,size={SCRATCH_MB}m,mode=1777",
            "--tmpfs", "/run/grader:rw,nosuid,nodev,noexec,size=16m,mode=0700",
            "--shm-size", "16m",
            "--memory", memory, "--memory-swap", memory, "--oom-score-adj", "500",
            "--pids-limit", str(self.pids), "--cpus", f"{self.cpus:g}",
            "--ulimit", "nofile=1024:1024", "--ulimit", "core=0",
            "--user", "0:0", "--cap-drop", "ALL", "--cap-add", "SETUID", "--cap-add", "SETGID",
            "--cap-add", "KILL",
            "--security-opt", "no-new-privileges",  # Docker's default seccomp profile applies too
            "--log-driver", "none",  # the learner's output must not pile up in the engine's logs
            "-e", f"DLA_LEARNER_UID_BASE={random.randrange(1, 20_000) * 100_000}",
        ]
        if self.gpus:
            flags += ["--gpus", "all"]
        return flags + [self.image]


class Container:
    """One single-use grading container: started, waits ready, takes one request, then it is gone."""

    def __init__(self, spec: ContainerSpec, on_change: Callable[[Container], None] | None = None):
        """Start it now. `on_change(self)` is called (from a reader thread) once when it is ready and
        once when its output ends."""
        binary = docker_binary()
        if binary is None:
            raise SandboxError("the docker command is not installed")
        self.spec = spec
        self.name = f"dla-{uuid.uuid4().hex[:16]}"
        self.started = time.monotonic()
        self.ready_at: float | None = None
        self.ended = False
        self._settled = threading.Event()  # ready, or ended before it was
        self._on_change = on_change
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: list[bytes] = []
        self._binary = binary
        self.process = subprocess.Popen([binary, *spec.command(self.name)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True)
        self._threads = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self) -> None:
        """The ready line, then verdict lines; a line over VERDICT_CAP ends the reading (and the container)."""
        buffer = b""
        stream = self.process.stdout
        assert stream is not None
        while True:
            chunk = stream.read1(65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if self.ready_at is None and line.startswith(b'{"ready": true'):
                    self.ready_at = time.monotonic()
                    self._settled.set()
                    self._notify()
                else:
                    self._lines.put(line)
            if len(buffer) > VERDICT_CAP:
                self._lines.put(b"\0oversized")
                self.kill()
                break
        self.ended = True
        self._lines.put(None)
        self._settled.set()
        self._notify()

    def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change(self)

    def _read_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        kept = 0
        while True:
            chunk = stream.read1(65536)
            if not chunk:
                break
            if kept < STDERR_CAP:
                self._stderr.append(chunk[:STDERR_CAP - kept])
                kept += len(self._stderr[-1])

    def stderr_tail(self, size: int = 1500) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")[-size:]

    def _next_line(self, deadline: float) -> bytes | None:
        try:
            return self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError from None

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Block until the container has warmed its imports; SandboxError if it never does."""
        if not self._settled.wait(timeout):
            self.kill()
            raise SandboxError(f"the grading container did not start within {timeout:g} s")
        if self.ready_at is None:
            raise SandboxError(f"the grading container failed to start (exit {self.wait(10)}): "
                               f"{self.stderr_tail()}")

    def alive(self) -> bool:
        return self.process.poll() is None

    def grade(self, exercise: Exercise, code: str, seed: int | None) -> dict[str, Any]:
        """Hand over the one submission and wait for the raw verdict (then the container exits)."""
        request = {"exercise": f"{exercise.path.parent.name}/{exercise.path.name}", "code": code,
                   "seed": seed}
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.close()
        except (BrokenPipeError, OSError):
            pass  # the container is gone: reported below as no verdict
        self.wait_ready()
        limit = exercise.time_limit_s + CHECKS_GRACE_S
        try:
            line = self._next_line(time.monotonic() + limit)
        except TimeoutError:
            self.kill()
            return {"status": "timeout", "error": {"kind": "timeout", "line": None, "message":
                    f"Your code did not finish within {limit:g} s; its container was stopped."}}
        if line == b"\0oversized":
            raise SandboxError("the grading container printed an oversized verdict")
        if line is None:
            code_ = self.wait(10)
            if code_ == 137:  # SIGKILL: the cgroup's OOM killer, the learner's limits are per process
                return {"status": "killed", "error": {"kind": "memory", "line": None, "message":
                        f"Your code's container was killed: it used more than its "
                        f"{self.spec.memory_mb} MB of memory."}}
            raise SandboxError(f"the grading container exited {code_} without a verdict: "
                               f"{self.stderr_tail()}")
        try:
            verdict = json.loads(line)
        except ValueError:
            raise SandboxError("the grading container printed something that is not a verdict") from None
        if not isinstance(verdict, dict):
            raise SandboxError("the grading container printed something that is not a verdict")
        return verdict

    def wait(self, timeout: float) -> int | None:
        """Wait for the docker client (and so the container, started with --rm) to end."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            try:
                return self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                return None

    def kill(self) -> None:
        """Remove the container now (killing it), then its docker client."""
        try:
            subprocess.run([self._binary, "rm", "-f", self.name], capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            pass
        if self.process.poll() is None:
            self.process.kill()

    def close(self) -> None:
        """The container must be gone when this returns: wait for it, force it if needed."""
        if self.process.stdin and not self.process.stdin.closed:
            try:
                self.process.stdin.close()  # a waiting container reads EOF and exits
            except OSError:
                pass
        self.wait(10)
        for thread in self._threads:
            thread.join(timeout=5)


class DockerSandbox:
    name = "docker"

    def __init__(self, image: str | None = None):
        self.image = image or os.environ.get(IMAGE_ENV) or CPU_IMAGE

    def available(self) -> tuple[bool, str]:
        from sandbox import pool

        if pool.active() is not None:  # checked its image when it started
            return True, ""
        return image_ready(self.image)

    def spec_for(self, exercise: Exercise) -> ContainerSpec:
        gpus = exercise.uses_gpu and host_has_gpu()
        image = self.image
        if gpus and IMAGE_ENV not in os.environ and image_ready(CUDA_IMAGE)[0]:
            image = CUDA_IMAGE
        elif gpus and image == CPU_IMAGE:
            gpus = False  # the CPU image cannot use a GPU: grade the CPU path
        return ContainerSpec(image=image, memory_mb=exercise.memory_mb + GRADER_MEMORY_MB, gpus=gpus)

    def run(self, exercise: Exercise, code: str, *, seed: int | None = None) -> dict[str, Any]:
        from sandbox import pool

        spec = self.spec_for(exercise)
        warm = pool.active()
        container = warm.take(spec) if warm is not None else None
        if container is None:
            container = Container(spec)
        try:
            return container.grade(exercise, code, seed)
        finally:
            if warm is not None and warm.owns(container):
                warm.discard(container)  # its exit and removal happen off the submitter's clock
            else:
                container.close()
