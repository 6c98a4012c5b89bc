"""What learners do and what grades it: submissions and their jobs, drafts, progress, quiz answers, hints,
validation and regrade runs."""
from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

if TYPE_CHECKING:
    from grader.core.result import Result

from academy.data.models.base import Base, utcnow
from academy.data.models.users import User


def stored_result(result_json: str | None) -> Result | None:
    """A stored result, as every reader gets it: in today's shape (grader.core.result.upgrade_result, the one
    upgrade path; imported here, not at the top, for it imports jsonschema, which no command needs)."""
    from grader.core.result import upgrade_result

    return upgrade_result(json.loads(result_json)) if result_json else None


class JobStatus(StrEnum):
    """Where a background job's row (a submission, a regrade) is. DONE: the job finished; for a submission
    that means graded, whatever the verdict (learner code that raised is a verdict: result status
    `grader.core.protocol.Status.ERROR`). ERROR: the platform could not finish it (the grader or a worker failed).
    The values are what the API returns and the rows store."""
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"


class ValidationStatus(StrEnum):
    """An instructor's `grader validate` run: OK/FAILED say what validation found; ERROR: it could not run."""
    QUEUED = "queued"
    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    ERROR = "error"


PENDING = (JobStatus.QUEUED, JobStatus.RUNNING)  # a row some job has still to finish


class SubmissionKind(StrEnum):
    """GRADE: an attempt, graded. RUN: the learner's function once on the exercise's example (Run), no verdict:
    stored as a submission so the one-pending-job index covers it, never counted as an attempt."""
    GRADE = "grade"
    RUN = "run"


class Submission(Base):
    """One graded attempt (kind "grade"), or one Run (kind "run"). Written with status "queued" before any
    grading starts. Every reader of attempts selects `GRADED` rows only."""
    __tablename__ = "submissions"
    # At most one queued or running submission per learner, enforced by the database: thirty concurrent
    # POSTs (or several web processes) cannot slip past a count taken before the insert.
    __table_args__ = (Index("ix_submissions_one_pending", "user_id", unique=True,
                            sqlite_where=text("status IN ('queued', 'running')"),
                            postgresql_where=text("status IN ('queued', 'running')")),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    exercise_id: Mapped[str] = mapped_column(String(200), index=True)
    code: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.QUEUED)  # JobStatus
    passed: Mapped[bool] = mapped_column(Boolean, default=False)
    result_json: Mapped[str | None] = mapped_column(Text)  # the `grader check --json` object
    error_message: Mapped[str | None] = mapped_column(Text)  # why grading itself failed (status error)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Whose turn this job takes in the grading line (academy/fairness.py): "user-ID" for an account,
    # "guest@ADDRESS" for a guest, so guests minted from one client share a single turn.
    fair_key: Mapped[str | None] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(8), default=SubmissionKind.GRADE,
                                      server_default=SubmissionKind.GRADE.value)  # SubmissionKind

    user: Mapped[User] = relationship()

    @property
    def result(self) -> dict[str, Any] | None:
        return stored_result(self.result_json)


class Draft(Base):
    """The learner's unsubmitted editor contents, so a reload (or another device) loses nothing."""
    __tablename__ = "drafts"
    __table_args__ = (UniqueConstraint("user_id", "exercise_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    exercise_id: Mapped[str] = mapped_column(String(200))
    code: Mapped[str] = mapped_column(Text)
    # What the stored drafts of an account, and of a client address, add up to (api.save_draft's quotas):
    # the code's UTF-8 size, and the address that saved it last.
    size_bytes: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    address: Mapped[str | None] = mapped_column(String(64), index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class LessonProgress(Base):
    """Where the learner is in a lesson: the step to resume at, by its id (grader.core.course: stable when steps
    are inserted, removed or reordered)."""
    __tablename__ = "lesson_progress"
    __table_args__ = (UniqueConstraint("user_id", "lesson_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    lesson_id: Mapped[str] = mapped_column(String(100))
    step_id: Mapped[str] = mapped_column(String(100))
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class StepVisit(Base):
    """A step whose page the learner opened (a card is done once seen), by step id."""
    __tablename__ = "step_visits"
    __table_args__ = (UniqueConstraint("user_id", "lesson_id", "step_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    lesson_id: Mapped[str] = mapped_column(String(100))
    step_id: Mapped[str] = mapped_column(String(100))
    seen_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class QuizAnswer(Base):
    """One answer to one quiz question. Every answer is kept: the first per question is the first try."""
    __tablename__ = "quiz_answers"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    lesson_id: Mapped[str] = mapped_column(String(100))
    question_id: Mapped[str] = mapped_column(String(100))
    option_id: Mapped[str] = mapped_column(String(100))  # grader.core.course.QuizOption.id, stable when reordered
    correct: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class HintReveal(Base):
    """A hint the learner asked to see: hint `number` (1-based) of one failed check of one submission."""
    __tablename__ = "hint_reveals"
    __table_args__ = (UniqueConstraint("submission_id", "check_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    check_id: Mapped[str] = mapped_column(String(100))
    number: Mapped[int] = mapped_column(Integer)
    revealed_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ValidationRun(Base):
    """An instructor-requested `grader validate` of one exercise, run in the background."""
    __tablename__ = "validation_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    exercise_id: Mapped[str] = mapped_column(String(200), index=True)
    status: Mapped[str] = mapped_column(String(16), default=ValidationStatus.QUEUED)  # ValidationStatus
    report: Mapped[str | None] = mapped_column(Text)  # one line per case
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    # A hash of the exercise's folder as validated (academy.jobs.exercise_fingerprint; migration 0009):
    # the overview says when the files changed since. None for runs from before it.
    content_hash: Mapped[str | None] = mapped_column(String(64))


REGRADE_BUSY = PENDING


class RegradeRun(Base):
    """An instructor-requested regrade: every finished submission of one exercise graded again with the
    exercise's current checks, in the background. `changes_json` holds one entry per submission it
    regraded (see `academy.jobs.regrade_exercise_run`), with the result it replaced."""
    __tablename__ = "regrade_runs"
    # At most one queued or running regrade per exercise, enforced by the database: two instructors
    # clicking at once (or two web processes) cannot start two runs over the same submissions.
    __table_args__ = (Index("ix_regrade_runs_one_busy", "exercise_id", unique=True,
                            sqlite_where=text("status IN ('queued', 'running')"),
                            postgresql_where=text("status IN ('queued', 'running')")),)

    id: Mapped[int] = mapped_column(primary_key=True)
    exercise_id: Mapped[str] = mapped_column(String(200), index=True)
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.QUEUED)  # JobStatus
    error_message: Mapped[str | None] = mapped_column(Text)  # why the run as a whole stopped (status error)
    total: Mapped[int] = mapped_column(Integer, default=0)  # finished submissions it covers
    regraded: Mapped[int] = mapped_column(Integer, default=0)  # of those, handled so far (changed+same+failed)
    changed: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)  # could not be graded; they keep their verdict
    changes_json: Mapped[str | None] = mapped_column(Text)  # JSON list, one entry per regraded submission
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)  # last progress: tells a stuck run
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)

    @property
    def busy(self) -> bool:
        return self.status in REGRADE_BUSY

    @property
    def unchanged(self) -> int:
        return self.regraded - self.changed - self.failed

    @property
    def entries(self) -> list[dict[str, Any]]:
        return json.loads(self.changes_json) if self.changes_json else []

    @property
    def changed_entries(self) -> list[dict[str, Any]]:
        return [entry for entry in self.entries if entry["changed"]]


GRADED = Submission.kind == SubmissionKind.GRADE  # attempts: every count, list and regrade reads only these
