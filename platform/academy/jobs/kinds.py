"""The kinds of background job, their fair keys, what a runner offers (`JobRunner`), and how a job is asked for:
`enqueue`, `enqueue_validation`, `enqueue_regrade` (the runner is academy.runners.init_app's)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from flask import current_app

if TYPE_CHECKING:
    pass



class JobKind(StrEnum):
    """The kinds of background job, by the names runners and the queue know them by (RQ's job arguments in
    Redis carry them: never rename one)."""
    GRADE_SUBMISSION = "grade_submission"
    VALIDATE_EXERCISE = "validate_exercise_run"
    REGRADE_EXERCISE = "regrade_exercise_run"


# The turn of instructors' validation and regrade jobs: one key like one learner's, so they take their
# turn among the learners' jobs, never all the graders and never last.
STAFF_KEY = "staff"
UNKEYED = "unkeyed"  # rows stored before fair keys existed


@dataclass(frozen=True)
class UnfinishedJob:
    """A row some job has still to finish: its job kind, id, fair key and when it was made."""
    kind: JobKind
    object_id: int
    key: str
    created_at: datetime



class JobRunner(Protocol):
    runs_here: bool  # True when the jobs run in this process (they end when it ends)

    def submit(self, kind: JobKind, object_id: int, key: str) -> None:
        """Run the job of `kind` (academy.jobs.JOBS) on `object_id` later, in an app context, in `key`'s turn.
        Never raises for a queue that is away: the row is already stored, and recovery finds it."""

    def recover(self) -> dict[str, int]:
        """Give every unfinished row (academy.jobs.unfinished) a live job; counts of what it did."""

    def shutdown(self) -> None:
        """Finish what this process runs (threads) and let go of connections."""


def enqueue(submission_id: int, key: str | None = None) -> None:
    _runner().submit(JobKind.GRADE_SUBMISSION, submission_id, key or UNKEYED)


def enqueue_validation(run_id: int) -> None:
    _runner().submit(JobKind.VALIDATE_EXERCISE, run_id, STAFF_KEY)


def enqueue_regrade(run_id: int) -> None:
    _runner().submit(JobKind.REGRADE_EXERCISE, run_id, STAFF_KEY)


def _runner() -> JobRunner:
    runner: JobRunner = current_app.extensions["academy.jobs"]  # set by academy.runners.init_app
    return runner
