"""This process's grading sandbox (`GradingSandbox`), made on first use and kept, with its warm pool."""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, cast  # cast: settings.load fills exercises_dir in

from flask import Flask

from academy.settings import settings
from grader.core.protocol import Request

if TYPE_CHECKING:
    from grader.core.course import Exercise
    from grader.host.sandboxes import HarnessSandbox
    from sandbox import Reply

log = logging.getLogger("academy.jobs")  # the name it has always logged under


class GradingSandbox:
    """This process's sandbox, made on first use and kept, with its warm pool of single-use grading
    processes (DLA_WARM_POOL, default 2; 0 = a cold process per submission; `warm` overrides it): a learner
    then waits a fraction of a second for a verdict instead of a torch start-up. It grades like the
    grader's `HarnessSandbox` (grader/host/sandboxes.py) for `run_submission`: a sandbox that cannot be
    made is that submission's infra-error."""

    def __init__(self, app: Flask, warm: int | None = None):
        self.app = app
        self.warm = settings(app).warm_pool if warm is None else warm
        self._sandbox: HarnessSandbox | None = None
        self._lock = threading.Lock()
        # Set once `warm_up()` has ended: the pool's processes are started and waiting (or none can be: then each
        # job meets the sandbox's error). A serving process is ready when this is set (academy/serve.py).
        self.ready = threading.Event()

    @property
    def name(self) -> str:
        return self._sandbox.name if self._sandbox is not None else settings(self.app).sandbox

    def available(self) -> tuple[bool, str]:
        from sandbox import SandboxError

        try:
            self.get()
        except SandboxError as exc:
            return False, str(exc)
        return True, ""

    def require(self) -> None:
        self.get()

    def warm_up(self) -> None:
        """Make the sandbox and wait until its warm pool's processes are started and waiting, then set `ready`
        (academy.runners.start_serving runs this in the background when a serving process starts, so that a
        first Run does not wait for torch to import). A sandbox that cannot be made here is each job's own
        error, as before; `ready` is set then too."""
        from sandbox import SandboxError

        try:
            pool = self.get().pool
            if pool is not None:
                pool.wait_warm()
        except SandboxError as exc:
            log.warning("the grading sandbox cannot start: %s", exc)
        finally:
            self.ready.set()

    def grade(self, exercise: Exercise, request: Request) -> Reply:
        return self.get().grade(exercise, request)

    def get(self) -> HarnessSandbox:
        from grader.host.sandboxes import SERVICE_SANDBOXES, get_sandbox, names
        from sandbox import SandboxError

        with self._lock:
            if self._sandbox is None:
                name, hide, warm = settings(self.app).sandbox, [Path(self.app.instance_path)], self.warm
                course = Path(cast(str, settings(self.app).exercises_dir))  # the course the app serves, one source
                if name in names() and name not in SERVICE_SANDBOXES:  # "unconfined": other people's code
                    raise SandboxError(f"DLA_SANDBOX={name!r} is never used by the web app or the worker: "
                                       f"they grade with one of {', '.join(SERVICE_SANDBOXES)}")
                try:
                    sandbox = get_sandbox(name, course_root=course, hide=hide, warm=warm)
                except SandboxError as exc:
                    if warm < 1:
                        raise
                    # Grading still works, a cold process per submission: slower, and the log says why.
                    log.warning("no warm sandbox pool: %s", exc)
                    sandbox = get_sandbox(name, course_root=course, hide=hide)
                sandbox.require()  # a sandbox that cannot confine here is refused before any submission
                self._sandbox = sandbox
            return self._sandbox

    def stale_image_note(self) -> str | None:
        """What an instructor must know when the course on disk no longer matches the grader image."""
        from grader.host.image import content_fingerprint
        from grader.host.sandboxes import grader_image
        from sandbox.docker import STALE_IMAGE_FIX, stale_image

        if settings(self.app).sandbox not in ("auto", "docker"):
            return None
        image = grader_image()
        if not stale_image(image, content_fingerprint(course_root=Path(cast(str, settings(self.app).exercises_dir)))):
            return None
        if self._sandbox is not None and self._sandbox.name == "docker":
            return (f"The course or grader files changed since the grader image {image} was built: learners are "
                    f"still graded with the image's copy of the checks, and Validate runs that copy too. To grade "
                    f"with the files on disk, {STALE_IMAGE_FIX}.")
        return (f"The course or grader files changed since the grader image {image} was built, so Docker is not "
                f"used: learners are graded by the local sandbox, which takes seconds longer per verdict. "
                f"To use Docker again, {STALE_IMAGE_FIX}.")

    def describe(self) -> str:
        sandbox = self.get()
        pool = getattr(sandbox, "pool", None)
        return f"{sandbox.name} (warm pool of {pool.size})" if pool is not None else f"{sandbox.name} (cold)"

    def close(self) -> None:
        with self._lock:
            if self._sandbox is not None:
                self._sandbox.close()
                self._sandbox = None


def grading_sandbox(app: Flask) -> GradingSandbox:
    sandbox: GradingSandbox = app.extensions["academy.sandbox"]
    return sandbox
