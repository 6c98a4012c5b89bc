"""Where learner code runs. Each sandbox runs the same harness (`python -m grader.harness`) and hands
back its raw verdict; `grader.grading.run_submission` is the only caller.

    local   a child process of this machine, confined by namespaces and limits (sandbox/local.py)
    docker  a single-use hardened container, from a warm pool when one is running (sandbox/docker.py)
    auto    docker when an engine and the grader image are there, else local
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from grader.course import Exercise


class SandboxError(Exception):
    """The sandbox itself failed (not the learner's code): graded as infra-error, exit code 3."""


class Sandbox(Protocol):
    name: str

    def available(self) -> tuple[bool, str]:
        """(usable here?, why not)."""

    def run(self, exercise: Exercise, code: str, *, seed: int | None = None) -> dict[str, Any]:
        """Grade `code` and return the harness's raw verdict (validated by the caller)."""


def _registry() -> dict[str, type]:
    from sandbox.local import LocalSandbox

    sandboxes: dict[str, type] = {"local": LocalSandbox}
    try:
        from sandbox.docker import DockerSandbox
    except ImportError:
        pass
    else:
        sandboxes["docker"] = DockerSandbox
    return sandboxes


def names() -> list[str]:
    return ["auto", *_registry()]


def get_sandbox(name: str = "auto", hide: list[Path] | None = None) -> Sandbox:
    """The sandbox called `name`; "auto" prefers docker when it is usable here.

    `hide`: host paths learner code must not see (the web app's instance folder); only the local
    sandbox needs it, a container sees nothing of the host.
    """
    registry = _registry()
    if name == "auto":
        if "docker" in registry:
            docker = registry["docker"]()
            if docker.available()[0]:
                return docker
        return registry["local"](hide=hide)
    if name not in registry:
        raise SandboxError(f"unknown sandbox '{name}' (choose from {', '.join(names())})")
    sandbox = registry[name](hide=hide) if name == "local" else registry[name]()
    ok, why = sandbox.available()
    if not ok:
        raise SandboxError(f"the {name} sandbox is not available here: {why}")
    return sandbox
