"""The database tables. `db.py` owns the engine and sessions; Alembic (migrations/) owns the schema."""
from __future__ import annotations

import json
import secrets
from datetime import datetime, timezone
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

if TYPE_CHECKING:
    from grader.core.result import Result


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)  # stored naive, always UTC


class Base(DeclarativeBase):
    pass


def stored_result(result_json: str | None) -> Result | None:
    """A stored result, as every reader gets it: in today's shape (grader.core.result.upgrade_result, the one
    upgrade path; imported here, not at the top, for it imports jsonschema, which no command needs)."""
    from grader.core.result import upgrade_result

    return upgrade_result(json.loads(result_json)) if result_json else None


NAME_MAX = 100  # a display name's characters (auth.clean_name)
SIS_ID_MAX = 100


def new_session_secret() -> str:
    return secrets.token_urlsafe(32)


class User(Base):
    __tablename__ = "users"
    # An id is never handed out twice (SQLite's AUTOINCREMENT; PostgreSQL's sequence never goes back): a row
    # that still names a deleted user, a cookie or a log line, can never come to mean somebody else.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(primary_key=True)
    # Guests have no email or password until they turn their guest account into a real one.
    email: Mapped[str | None] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(256))
    role: Mapped[str] = mapped_column(String(16), default="learner")  # learner | instructor
    is_guest: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # Random, carried in the session cookie and compared on every request (security.py): a cookie names this
    # user and this secret, so it dies with the row, and replacing the secret (sign-out, a password change,
    # "sign out everywhere", a guest signing up, signing in or being merged) ends every cookie issued
    # before, copies included.
    session_secret: Mapped[str] = mapped_column(String(64), default=new_session_secret)
    # Random, what this user's device cookies are bound to (with the password hash: backoff.py): replaced by a
    # password change and "sign out everywhere else", never by a sign-out, so the owner's browsers stay known.
    # None for rows from before migration 0008 (until one of those replaces it).
    device_secret: Mapped[str | None] = mapped_column(String(64), default=new_session_secret)
    # Last request of this user, written at most every SEEN_EVERY (security.py); guests idle for 30 days
    # are removed by `flask --app academy remove-idle-guests`.
    last_seen_at: Mapped[datetime | None] = mapped_column(DateTime)
    # The interface language the learner chose with the switcher (academy/i18n.py); None: not chosen.
    language: Mapped[str | None] = mapped_column(String(8))
    # The person's name as an LMS shows it (sign-up asks for it; an instructor may correct it; an LTI launch
    # brings the LMS's own): the gradebooks' "Student" column (migration 0009). None for guests and older rows.
    name: Mapped[str | None] = mapped_column(String(NAME_MAX))
    # The institution's student id (Canvas's "SIS User ID"), set by an instructor or an LTI launch's `lis`
    # claim; optional, and never two accounts with the same one.
    sis_id: Mapped[str | None] = mapped_column(String(SIS_ID_MAX), unique=True, index=True)
    # When the owner proved `email` is theirs (a confirmation link opened with the account's password;
    # academy/confirmation.py), or an operator vouched for it (`create-user`). None: unconfirmed, as every
    # account from before migration 0011: such an address is never a gradebook's matching key, and a sign-up
    # by whoever owns it takes it away (a sign-up link: SignupLinkMail).
    email_confirmed_at: Mapped[datetime | None] = mapped_column(DateTime)
    confirmation_sent_at: Mapped[datetime | None] = mapped_column(DateTime)  # the last link mailed (rate limit)

    tokens: Mapped[list[ApiToken]] = relationship(back_populates="user", cascade="all, delete-orphan")

    def end_sessions(self) -> None:
        """Every cookie issued to this user so far stops working, copies included (caller commits)."""
        self.session_secret = new_session_secret()

    def forget_devices(self) -> None:
        """Every device cookie issued for this user so far counts for nothing (caller commits)."""
        self.device_secret = new_session_secret()

    @property
    def is_instructor(self) -> bool:
        return self.role == "instructor"

    @property
    def email_confirmed(self) -> bool:
        return self.email is not None and self.email_confirmed_at is not None

    @property
    def display_name(self) -> str:
        return self.name or self.email or f"guest #{self.id}"


class ApiToken(Base):
    """A personal API token. Only its SHA-256 is stored; the token itself is shown once."""
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(12))  # shown in lists so users can tell tokens apart
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime)

    user: Mapped[User] = relationship(back_populates="tokens")


class SignupLinkMail(Base):
    """One sign-up link mailed to an address that an unconfirmed account holds (migration 0011;
    academy/confirmation.py: mail_signup_link): the address and when, nothing of the sign-up (the link's opener
    chooses the password). The rows bound the mails one address gets, whoever signs up."""
    __tablename__ = "signup_link_mails"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), index=True)
    sent_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)


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
    # A hash of the exercise's folder as validated (academy.instructor.exercise_fingerprint; migration 0009):
    # the overview says when the files changed since. None for runs from before it.
    content_hash: Mapped[str | None] = mapped_column(String(64))


class SigninFailure(Base):
    """Wrong passwords counted under one key (academy/backoff.py): an account (its email, as typed), a client
    address, or one browser's device cookie. The key is a hash, so typed emails are not kept."""
    __tablename__ = "signin_failures"

    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)  # wrong passwords (right ones are given back)
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # every attempt counted, ever: the row's version
    last_failure_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)


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



# -- LTI 1.3 (academy/lti/) ---------------------------------------------------------------------------

class LtiPlatform(Base):
    """One registration of this tool in an LMS: the platform's issuer and the client id it gave the tool,
    its endpoints, and the key pair the tool signs with for it (its public half is in /lti/jwks). An
    issuer may register the tool more than once (several client ids): a registration is the pair."""
    __tablename__ = "lti_platforms"
    __table_args__ = (UniqueConstraint("issuer", "client_id"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))  # how instructors tell registrations apart
    issuer: Mapped[str] = mapped_column(String(255))
    client_id: Mapped[str] = mapped_column(String(255))
    auth_login_url: Mapped[str] = mapped_column(String(1000))  # the platform's OIDC authorization endpoint
    auth_token_url: Mapped[str] = mapped_column(String(1000))  # its OAuth 2 token endpoint (grade passback)
    key_set_url: Mapped[str] = mapped_column(String(1000))  # its public keys (JWKS)
    auth_audience: Mapped[str | None] = mapped_column(String(1000))  # the token endpoint's audience, if not its URL
    tool_private_key: Mapped[str] = mapped_column(Text)  # PEM; the tool's signing key for this registration
    tool_kid: Mapped[str] = mapped_column(String(100), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # Set when an instructor removes it: the row stays so that registering the same issuer and client id again
    # brings it back, and its learners' launches find their accounts (academy/lti/registration.py: register_platform).
    removed_at: Mapped[datetime | None] = mapped_column(DateTime)

    deployments: Mapped[list[LtiDeployment]] = relationship(back_populates="platform", cascade="all, delete-orphan",
                                                            order_by="LtiDeployment.id")


class LtiDeployment(Base):
    """A deployment id the platform uses for this registration (Canvas: one per installation). A launch
    naming another deployment is refused."""
    __tablename__ = "lti_deployments"
    __table_args__ = (UniqueConstraint("platform_id", "deployment_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"), index=True)
    deployment_id: Mapped[str] = mapped_column(String(255))

    platform: Mapped[LtiPlatform] = relationship(back_populates="deployments")


class LtiIdentity(Base):
    """An LMS user as this site knows them: the account a launch signs in to. Keyed by the registration,
    the deployment and the platform's `sub`, never by an email or a name the LMS sends: one LMS user can
    only ever reach the account made for them."""
    __tablename__ = "lti_identities"
    __table_args__ = (UniqueConstraint("platform_id", "deployment_id", "sub"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    deployment_id: Mapped[str] = mapped_column(String(255))
    sub: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), unique=True)
    email: Mapped[str | None] = mapped_column(String(254))  # what the LMS said, shown to instructors only
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_launch_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    user: Mapped[User] = relationship()
    platform: Mapped[LtiPlatform] = relationship()


class LtiGradeLink(Base):
    """Where an exercise's best score goes for one LMS user: the line item of the resource link they
    launched it from (the launch's Assignment and Grade Services claim). Written at each launch; read after
    each graded submission (academy/lti/scores.py: send_best_score)."""
    __tablename__ = "lti_grade_links"
    __table_args__ = (UniqueConstraint("identity_id", "resource_link_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    identity_id: Mapped[int] = mapped_column(ForeignKey("lti_identities.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    exercise_id: Mapped[str] = mapped_column(String(200))
    resource_link_id: Mapped[str] = mapped_column(String(255))
    ags_json: Mapped[str] = mapped_column(Text)  # the claim: scope, lineitem and/or lineitems
    sent_score: Mapped[float | None] = mapped_column()  # 0-100, the last score the platform accepted
    sent_at: Mapped[datetime | None] = mapped_column(DateTime)
    error: Mapped[str | None] = mapped_column(Text)  # why the last sending failed; None when it did not
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    identity: Mapped[LtiIdentity] = relationship()


class LtiValue(Base):
    """PyLTI1p3's launch data storage (academy/lti/pylti.py: DatabaseStorage): the OIDC login's nonces and the
    validated launches, each under a key that holds the browser's LTI session id, until it expires. A
    nonce is deleted when a launch uses it, so no launch can be replayed."""
    __tablename__ = "lti_values"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[str] = mapped_column(Text)  # JSON
    expires_at: Mapped[datetime] = mapped_column(DateTime, index=True)


class TutorMessage(Base):
    """One turn of a learner's conversation with the tutor about one step: the question, or the answer as the
    learner was shown it (after the guard), with the sources it cited. Kept per learner and step; a guest's move
    to the account they sign up for or merge into (progress.merge_guest)."""
    __tablename__ = "tutor_messages"
    __table_args__ = (Index("ix_tutor_messages_user_step", "user_id", "lesson_id", "step_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    lesson_id: Mapped[str] = mapped_column(String(100))
    step_id: Mapped[str] = mapped_column(String(100))
    # The exercise the step is (None on a card): the instructor's per-exercise summary reads it.
    exercise_id: Mapped[str | None] = mapped_column(String(200), index=True)
    role: Mapped[str] = mapped_column(String(16))  # "learner" | "tutor"
    text: Mapped[str] = mapped_column(Text)
    sources_json: Mapped[str | None] = mapped_column(Text)  # the tutor's: [{"title", "url"}]
    # How the answer ended: "done", "length" (max_tokens), "stopped" (the learner), "timeout", "error".
    outcome: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
