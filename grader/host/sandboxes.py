"""Which sandbox grades, and what it starts: the grader's side of the sandbox contract (sandbox/__init__.py).

    auto        docker when an engine and a current grader image are there, else local if it can confine
                here; never a sandbox that would degrade
    local       the harness as a process of this machine (python -m grader.harness), confining the
                learner's code itself
    docker      a single-use container of the grader image (sandbox/Dockerfile), whose entry is the harness
    unconfined  for `grader check` on one's own code only

`get_sandbox(name, warm=2)` starts a warm pool; the caller closes the sandbox when done. A local sandbox
checks that this host confines before its first submission runs (`require()`); with a warm pool, at once.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from grader.core.course import Exercise, load_course
from grader.core.protocol import Request
from grader.core.settings import EXERCISE_MEMORY_MB, GRADER_IMAGE, GRADER_MEMORY_MB, exercises_root
from sandbox import Entry, Reply, Sandbox, SandboxError, Work

if TYPE_CHECKING:
    from sandbox.docker import DockerSandbox
    from sandbox.pool import WarmPool

CPU_IMAGE = "dla-grader:cpu"
CUDA_IMAGE = "dla-grader:cuda"
SERVICE_SANDBOXES = ("auto", "local", "docker")  # what grades other people's code


def names() -> list[str]:
    return [*SERVICE_SANDBOXES, "unconfined"]


def harness_entry(course_root: Path, hide: list[Path] | tuple[Path, ...] = (),
                  confinement: str = "namespaces") -> Entry:
    """`python -m grader.harness` for the course at `course_root` (resolved), hiding `hide` from learner code."""
    command = [sys.executable, "-m", "grader.harness", "--exercises", str(course_root.resolve())]
    for path in hide:
        command += ["--hide", str(path)]
    return Entry(tuple(command + ["--confinement", confinement]))


def work_for(exercise: Exercise, request: Request, hide: list[Path] | tuple[Path, ...] = (),
             confinement: str = "namespaces") -> Work:
    """One request for `exercise`: its own limits, plus the grading side's memory share in a container."""
    return Work(request.encode(), harness_entry(exercise.course_root, hide, confinement), exercise.time_limit_s,
                exercise.memory_mb + GRADER_MEMORY_MB, exercise.uses_gpu)


def grader_image() -> str:
    return GRADER_IMAGE.get() or CPU_IMAGE


def docker_sandbox(warm: int = 0, course_root: Path | None = None) -> DockerSandbox:
    """The docker sandbox for the grader image, which must hold the course at `course_root` (default: the one
    DLA_EXERCISES names), with a warm pool of `warm` containers that fit every exercise of the course;
    SandboxError when the image is missing or stale."""
    from grader.host.image import content_fingerprint
    from sandbox.docker import ContainerSpec, DockerSandbox, host_has_gpu, warm_pool

    content = content_fingerprint(course_root=course_root)
    gpu_image = None if GRADER_IMAGE.is_set() else CUDA_IMAGE
    if warm <= 0:
        return DockerSandbox(grader_image(), content, gpu_image=gpu_image)
    exercises = list(load_course(course_root).exercises.values())
    gpus = any(e.uses_gpu for e in exercises) and host_has_gpu()
    memory = max((e.memory_mb for e in exercises), default=EXERCISE_MEMORY_MB) + GRADER_MEMORY_MB
    image = CUDA_IMAGE if gpus and gpu_image else grader_image()
    pool = warm_pool(warm, ContainerSpec(image=image, memory_mb=memory, gpus=gpus), content)
    return DockerSandbox(grader_image(), content, pool=pool, gpu_image=gpu_image)


def get_sandbox(name: str = "auto", *, course_root: Path | None = None, hide: list[Path] | None = None,
                warm: int = 0) -> HarnessSandbox:
    """The sandbox called `name` for the course at `course_root` (default: the one DLA_EXERCISES names);
    "auto" prefers docker when it is usable here.

    `hide`: host paths learner code must not see (the web app's instance folder); only the local
    sandbox needs it, a container sees nothing of the host. `warm`: keep this many grading processes
    started and waiting (a warm pool); the caller then owns the sandbox and must `close()` it.
    """
    from sandbox.local import LocalSandbox, UnconfinedSandbox
    from sandbox.local import warm_pool as local_pool

    if name not in names():
        raise SandboxError(f"unknown sandbox '{name}' (choose from {', '.join(names())})")
    course_root = course_root or exercises_root()
    entry = harness_entry(course_root, hide or [], "none" if name == "unconfined" else "namespaces")
    if name == "unconfined":
        return HarnessSandbox(UnconfinedSandbox(entry), hide)
    docker_why = ""
    if name in ("auto", "docker"):
        docker = docker_sandbox(course_root=course_root)
        ok, docker_why = docker.available()
        if ok:
            return HarnessSandbox(docker_sandbox(warm, course_root) if warm > 0 else docker, hide)
        if name == "docker":
            raise SandboxError(f"the docker sandbox is not available here: {docker_why}")
    also = f"; the docker sandbox is not available either: {docker_why}" if docker_why else ""
    local = LocalSandbox(entry, also_unavailable=also)
    if warm > 0:  # a service: refuse now, before any submission is taken
        local.require()
        return HarnessSandbox(LocalSandbox(entry, pool=local_pool(entry, warm), also_unavailable=also), hide)
    return HarnessSandbox(local, hide)  # checked before its first submission runs, alongside the process start


class HarnessSandbox:
    """A sandbox that runs the grader's harness: `grade(exercise, request)` makes the work for it (the
    harness entry for the exercise's course, the paths the learner's code must not see, how the harness
    confines: from the sandbox's kind) and runs it. `run_submission` takes one of these, or a name."""

    def __init__(self, inner: Sandbox, hide: list[Path] | None = None) -> None:
        self.inner, self.hide = inner, list(hide or [])
        self.name = inner.name
        self.confinement = "none" if inner.name == "unconfined" else "namespaces"

    @property
    def pool(self) -> WarmPool | None:
        pool: WarmPool | None = getattr(self.inner, "pool", None)
        return pool

    def available(self) -> tuple[bool, str]:
        return self.inner.available()

    def require(self) -> None:
        self.inner.require()

    def grade(self, exercise: Exercise, request: Request) -> Reply:
        return self.inner.run(work_for(exercise, request, self.hide, self.confinement))

    def close(self) -> None:
        self.inner.close()

    def describe(self) -> str:
        """How this sandbox grades, for start-up messages ("docker (warm pool of 2 containers)")."""
        pool = self.pool
        if pool is None:
            return self.name
        unit = "containers" if self.name == "docker" else "processes"
        return f"{self.name} (warm pool of {pool.size} {unit})"
