"""Jobs on threads inside the web process (the embedded default), taken in turns."""
from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Callable, Mapping

from flask import Flask

from academy import jobs
from academy.data.db import get_session
from academy.data.models import utcnow
from academy.jobs import JobKind

log = logging.getLogger("academy.runners.threads")


class ThreadRunner:
    """Jobs on threads inside the web process (the embedded default), taken in turns.

    Each key (an account, the guests of one client address, the instructors' jobs) has at most one job
    running; keys with waiting jobs take turns in a line, and a key whose job finished goes to the back
    of the line. One client flooding the queue then waits behind its own jobs and holds at most one
    grader, while everyone else's next job starts within one turn.
    """

    runs_here = True

    def __init__(self, app: Flask, workers: int, handlers: Mapping[str, Callable[[int], None]] | None = None):
        self.app = app
        self.workers = workers
        # What runs a job of each kind: academy.jobs.JOBS (tests time the turns with jobs of their own).
        self.handlers = handlers if handlers is not None else {kind: job.run for kind, job in jobs.JOBS.items()}
        self.made_at = utcnow()  # rows unfinished from before this were left by a stopped process (recover)
        self._cond = threading.Condition()
        self._waiting: dict[str, deque[tuple[JobKind, int]]] = {}
        self._line: deque[str] = deque()  # keys with a waiting job and none running, in turn order
        self._running: set[str] = set()
        self._threads: list[threading.Thread] = []  # started on first use: the factory starts nothing
        self._busy = 0
        self._stopping = False

    def submit(self, kind: JobKind, object_id: int, key: str = jobs.UNKEYED) -> None:
        with self._cond:
            if self._stopping:
                raise RuntimeError("the job runner is shut down")
            self._waiting.setdefault(key, deque()).append((kind, object_id))
            if key not in self._running and key not in self._line:
                self._line.append(key)
            if not self._threads:
                for number in range(self.workers):
                    thread = threading.Thread(target=self._work, name=f"academy-job-{number}", daemon=True)
                    thread.start()
                    self._threads.append(thread)
            self._cond.notify()

    def _next(self) -> tuple[str, JobKind, int] | None:
        with self._cond:
            while not self._line:
                if self._stopping and not self._busy:
                    self._cond.notify_all()
                    return None
                self._cond.wait()
            key = self._line.popleft()
            kind, object_id = self._waiting[key].popleft()
            self._running.add(key)
            self._busy += 1
            return key, kind, object_id

    def _done(self, key: str) -> None:
        with self._cond:
            self._running.discard(key)
            self._busy -= 1
            if self._waiting.get(key):
                self._line.append(key)  # its next job goes to the back of the line
            else:
                self._waiting.pop(key, None)
            self._cond.notify_all()

    def _work(self) -> None:
        while (picked := self._next()) is not None:
            key, kind, object_id = picked
            try:
                with self.app.app_context():
                    self.handlers[kind](object_id)
            except Exception:  # the job records its own failure; this only keeps the worker thread alive
                log.exception("background job %s(%s) failed", kind, object_id)
            finally:
                self._done(key)

    def shutdown(self) -> None:
        """Run every job submitted so far, then stop the threads."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()

    def recover(self) -> dict[str, int]:
        """Every row left unfinished before this runner was made was left by a stopped process (without a queue,
        the serving process grades them all): run them again. Rows made since have a live job: this process's
        own, or that of a command such as `flask --app academy regrade` grading on its own threads."""
        with self.app.app_context():
            lost = [job for job in jobs.unfinished() if job.created_at <= self.made_at]
            db = get_session()
            for job in lost:
                jobs.JOBS[job.kind].restart(db, job.object_id)
            db.commit()
        for job in lost:
            self.submit(job.kind, job.object_id, job.key)
        return {"requeued": len(lost)}
