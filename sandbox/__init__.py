"""Where learner code runs. Every sandbox starts the same harness entry (`python -m grader.harness`)
and speaks the same protocol with it (grader/protocol.py); `grader.grading.run_submission` is the only
caller of `Sandbox.run`.

    local       a process of this machine, confined by namespaces, an allowlist view, a cgroup and
                seccomp (sandbox/local.py); refused where the host cannot give all of them
    docker      a single-use hardened container (sandbox/docker.py)
    auto        docker when an engine and a current grader image are there, else local if it can
                confine here; never a sandbox that would degrade
    unconfined  for `grader check` on one's own code only: rlimits, nothing hidden; never automatic,
                never for the web app or the worker

Either can be given a warm pool (sandbox/pool.py) of started, single-use grading processes:
`get_sandbox(name, warm=2)` starts one; the caller closes the sandbox when done. A local sandbox checks
that this host confines before its first submission runs (`require()`); with a warm pool, at once.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

from grader.course import Exercise
from grader.protocol import RawVerdict, Request


class SandboxError(Exception):
    """The sandbox itself failed (not the learner's code): graded as infra-error, exit code 3."""


class Sandbox(Protocol):
    name: str

    def available(self) -> tuple[bool, str]:
        """(usable here?, why not)."""

    def require(self) -> None:
        """SandboxError saying why, unless usable here."""

    def run(self, exercise: Exercise, request: Request) -> RawVerdict:
        """Grade one request (for `exercise`, resolved by the caller) and return the raw verdict."""

    def close(self) -> None:
        """Stop its warm processes, if it has any."""


SERVICE_SANDBOXES = ("auto", "local", "docker")  # what grades other people's code


def names() -> list[str]:
    return [*SERVICE_SANDBOXES, "unconfined"]


def get_sandbox(name: str = "auto", *, hide: list[Path] | None = None, warm: int = 0) -> Sandbox:
    """The sandbox called `name`; "auto" prefers docker when it is usable here.

    `hide`: host paths learner code must not see (the web app's instance folder); only the local
    sandbox needs it, a container sees nothing of the host. `warm`: keep this many grading processes
    started and waiting (a warm pool); the caller then owns the sandbox and must `close()` it.
    """
    from grader.settings import exercises_root
    from sandbox.docker import DockerSandbox
    from sandbox.docker import warm_pool as docker_pool
    from sandbox.local import LocalSandbox, UnconfinedSandbox
    from sandbox.local import warm_pool as local_pool

    if name not in names():
        raise SandboxError(f"unknown sandbox '{name}' (choose from {', '.join(names())})")
    if name == "unconfined":
        return UnconfinedSandbox(hide)
    docker_why = ""
    if name in ("auto", "docker"):
        docker = DockerSandbox()
        ok, docker_why = docker.available()
        if ok:
            return DockerSandbox(pool=docker_pool(warm)) if warm > 0 else docker
        if name == "docker":
            raise SandboxError(f"the docker sandbox is not available here: {docker_why}")
    also = f"; the docker sandbox is not available either: {docker_why}" if docker_why else ""
    local = LocalSandbox(hide, also_unavailable=also)
    if warm > 0:  # a service: refuse now, before any submission is taken
        local.require()
        return LocalSandbox(hide, pool=local_pool(exercises_root(), list(hide or []), warm), also_unavailable=also)
    return local  # checked before its first submission runs (local.require()), alongside the process start
