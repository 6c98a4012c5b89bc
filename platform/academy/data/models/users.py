"""The accounts' tables: users, their API tokens, sign-up link mails, failed sign-ins."""
from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from academy.data.models.base import Base, utcnow

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
    # The interface language the learner chose with the switcher (academy/i18n/); None: not chosen.
    language: Mapped[str | None] = mapped_column(String(8))
    # The person's name as an LMS shows it (sign-up asks for it; an instructor may correct it; an LTI launch
    # brings the LMS's own): the gradebooks' "Student" column (migration 0009). None for guests and older rows.
    name: Mapped[str | None] = mapped_column(String(NAME_MAX))
    # The institution's student id (Canvas's "SIS User ID"), set by an instructor or an LTI launch's `lis`
    # claim; optional, and never two accounts with the same one.
    sis_id: Mapped[str | None] = mapped_column(String(SIS_ID_MAX), unique=True, index=True)
    # When the owner proved `email` is theirs (a confirmation link opened with the account's password;
    # academy/web/confirmation.py), or an operator vouched for it (`create-user`). None: unconfirmed, as every
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
    academy/web/confirmation.py: mail_signup_link): the address and when, nothing of the sign-up (the link's opener
    chooses the password). The rows bound the mails one address gets, whoever signs up."""
    __tablename__ = "signup_link_mails"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), index=True)
    sent_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)


class SigninFailure(Base):
    """Wrong passwords counted under one key (academy/web/backoff.py): an account (its email, as typed), a client
    address, or one browser's device cookie. The key is a hash, so typed emails are not kept."""
    __tablename__ = "signin_failures"

    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)  # wrong passwords (right ones are given back)
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # every attempt counted, ever: the row's version
    last_failure_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
