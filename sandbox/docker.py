"""The docker sandbox: every request is run in a fresh, hardened, single-use container.

The container runs its image's entry (for grading, `python -m grader.harness` from the grader image,
sandbox/Dockerfile, built by sandbox/build-images), which keeps the entry contract (sandbox/__init__.py):
it says it is ready, reads ONE request line from stdin and prints one reply line on stdout. Nothing of the
host is mounted; the request goes in over stdin. Which image, and whether it is current, is the caller's
to say (`DockerSandbox(image, content=...)`: the image's `dla.content` label must equal it).

A warm pool (sandbox/pool.py, made by `warm_pool`) keeps such containers started and waiting; a
`DockerSandbox` given one takes its containers from it, and otherwise starts a cold container.

Why the entry process is uid 0: it must drop the learner's child to a uid of its own (so learner code
can neither read the checks nor touch the grading process), which needs CAP_SETUID/CAP_SETGID, and
stop that child at its time limit, which needs CAP_KILL. Every other capability is dropped, the
learner's process loses these three when it changes uid, no-new-privileges is set, the root file
system is read-only.
"""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sandbox import Ending, Reply, SandboxError, Work
from sandbox.pool import WarmPool
from sandbox.process import EntryProcess, PopenProcess
from sandbox.settings import LEARNER_UID_BASE, SCRATCH_MB

CONTAINER_LABEL = "dla.sandbox"  # every grading container carries it: `docker ps -a --filter label=...`
CONTENT_LABEL = "dla.content"  # what an image was built from (its caller's fingerprint of those files)
CLIENT_EXIT_S = 30.0  # how long a container's removal waits for its docker client to exit before killing it


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


STALE_IMAGE_FIX = "run sandbox/build-images, then restart the app and its workers"


def stale_image(image: str, content: str) -> bool:
    """True when an engine has `image` but it was built from other files than those `content` fingerprints
    (requests would run with its copy of them, or not in docker at all)."""
    if docker_binary() is None:
        return False
    labels = image_labels(image)
    return labels is not None and labels.get(CONTENT_LABEL) != content


def image_ready(image: str, content: str | None) -> tuple[bool, str]:
    """(can run with `image`?, why not): an engine answers, has it, and it holds the files `content`
    fingerprints (None: any content will do)."""
    if docker_binary() is None:
        return False, "the docker command is not installed"
    labels = image_labels(image)
    if labels is None:
        return False, f"no Docker Engine answers or it has no image {image} (run sandbox/build-images)"
    if content is not None and labels.get(CONTENT_LABEL) != content:
        return False, (f"the image {image} was built from other grader or exercise files than these "
                       f"({STALE_IMAGE_FIX})")
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
            "-e", f"{LEARNER_UID_BASE.env}={random.randrange(1, 20_000) * 100_000}",
        ]
        if self.gpus:
            flags += ["--gpus", "all"]
        return flags + [self.image]


class Container(PopenProcess):
    """One single-use container: its `docker run -i --rm` client is our child process."""

    what = "grading container"

    def __init__(self, spec: ContainerSpec, on_change: Callable[[EntryProcess], None] | None = None):
        binary = docker_binary()
        if binary is None:
            raise SandboxError("the docker command is not installed")
        self.spec = spec
        self._binary = binary
        name = f"dla-{uuid.uuid4().hex[:16]}"
        super().__init__(name, [binary, *spec.command(name)], on_change=on_change)

    def exit_reply(self, exit_code: int | None) -> Reply | None:
        if exit_code == 137:  # SIGKILL: the cgroup's OOM killer (the confined limits are per process)
            return Reply(Ending.OUT_OF_MEMORY, memory_mb=self.spec.memory_mb)
        return None

    def kill(self) -> None:
        """Remove the container now (killing it), again until its docker client has exited, then once more.
        The client is not killed first: the daemon finishes a create whose client is gone, so a client killed
        between create and start left the container behind "Created" for good (`--rm` acts only when a
        container exits; seen when a warm pool closed during a refill). A client that exits on its own had
        every request it made answered: the last removal finds whatever it created. Only a client still
        there after CLIENT_EXIT_S (a hung engine) is killed."""
        deadline = time.monotonic() + CLIENT_EXIT_S
        while True:
            self._remove()
            try:
                self.process.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    super().kill()
                    break
        self._remove()

    def _remove(self) -> None:
        try:
            subprocess.run([self._binary, "rm", "-f", self.name], capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            pass


def warm_pool(size: int, spec: ContainerSpec, content: str | None) -> WarmPool:
    """A pool of warm containers of `spec`, whose image must hold the files `content` fingerprints."""
    ok, why = image_ready(spec.image, content)
    if not ok:
        raise SandboxError(f"cannot start a warm pool: {why}")
    return WarmPool(lambda on_change: Container(spec, on_change), size, serves=spec)


class DockerSandbox:
    """Requests in containers of `image` (`gpu_image` for work that wants a GPU, where the host has one and
    that image is ready), which must hold the files `content` fingerprints."""
    name = "docker"

    def __init__(self, image: str, content: str | None, pool: WarmPool | None = None, gpu_image: str | None = None):
        self.image, self.content, self.pool, self.gpu_image = image, content, pool, gpu_image

    def available(self) -> tuple[bool, str]:
        if self.pool is not None:  # checked its image when it started
            return True, ""
        return image_ready(self.image, self.content)

    def require(self) -> None:
        ok, why = self.available()
        if not ok:
            raise SandboxError(f"the docker sandbox is not available here: {why}")

    def spec_for(self, work: Work) -> ContainerSpec:
        gpus = work.gpu and host_has_gpu()
        image = self.image
        if gpus and self.gpu_image and image_ready(self.gpu_image, self.content)[0]:
            image = self.gpu_image
        elif gpus and self.gpu_image is not None:
            gpus = False  # no image that can use a GPU: run the CPU path
        return ContainerSpec(image=image, memory_mb=work.memory_mb, gpus=gpus)

    def run(self, work: Work) -> Reply:
        spec = self.spec_for(work)
        container = None
        if self.pool is not None and _fits(self.pool.serves, spec):
            container = self.pool.take()
        if container is None:
            container = Container(spec)
        try:
            return container.answer(work)
        finally:
            if self.pool is not None and self.pool.owns(container):
                self.pool.discard(container)  # its exit and removal happen off the submitter's clock
            else:
                container.close()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def _fits(pool_spec: object, spec: ContainerSpec) -> bool:
    return isinstance(pool_spec, ContainerSpec) and spec.image == pool_spec.image \
        and spec.gpus == pool_spec.gpus and spec.memory_mb <= pool_spec.memory_mb
