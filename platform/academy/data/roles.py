"""Roles: an account made an instructor or a learner again (`change_role`, the one place a role changes, used by the
`set-role` command and the instructor pages), and how the audit log names an account (`describe`)."""
from __future__ import annotations

import logging
from typing import Callable

from sqlalchemy import func, select, update
from sqlalchemy.orm import aliased

from academy.data.accounts import AccountError, gettext, revoke_tokens
from academy.data.db import get_session
from academy.data.models import User, utcnow
from academy.logline import printable

ROLES = ("learner", "instructor")
# Who was made or unmade an instructor, whose address an operator confirmed, by whom, when: one WARNING line
# each (the server's log: its stderr; a command's own stderr), so that it shows whatever the logging
# configuration, every value in it escaped (academy/logline.py).
audit = logging.getLogger("academy.audit")


def describe(user: User) -> str:
    """An account as a log line names it: its id (never reused), email and name."""
    return f"account #{user.id} <{user.email or 'no email'}> ({user.name or 'no name'})"


def change_role(user: User, role: str, *, by: str, end_sessions: Callable[[User], None] = User.end_sessions) -> None:
    """Make `user` an instructor (`role` "instructor") or a learner again, end the account's sessions
    (`end_sessions`: every cookie of it; the learner page passes security.end_other_sessions, which keeps the
    acting browser signed in when it is the account's own) and revoke its API tokens, commit, and log who did
    it (`by`) to whom, when. A copy of the account's cookie or token (a shared computer's, a stolen one) must
    neither gain the new role nor keep the old one: the account signs in again and makes new tokens.

    AccountError (its text for the page or the command) when `role` is neither, `user` is a guest (no account:
    it signs up first), already has the role, or is the last instructor: the instructor pages must stay
    reachable by somebody, so another account is made an instructor first. The last-instructor rule holds
    against simultaneous revocations too: the role changes by one UPDATE whose condition counts the
    instructors, after locking their rows (PostgreSQL; SQLite runs one writer at a time)."""
    if role not in ROLES:
        raise AccountError(gettext("A role is either learner or instructor."))
    who = user.display_name
    if user.is_guest:
        raise AccountError(gettext("%(who)s is a guest, not an account: it cannot be an instructor. It signs up "
                                   "first (and keeps its progress).", who=who))
    if user.role == role:
        raise AccountError(gettext("%(who)s is already an instructor; nothing changed.", who=who)
                           if role == "instructor" else
                           gettext("%(who)s is not an instructor; nothing changed.", who=who))
    db = get_session()
    if role == "learner":
        db.execute(select(User.id).where(User.role == "instructor").with_for_update())
        others = aliased(User)
        instructors = select(func.count()).select_from(others).where(others.role == "instructor").scalar_subquery()
        revoked = db.execute(update(User).where(User.id == user.id, User.role == "instructor", instructors > 1)
                             .values(role="learner").execution_options(synchronize_session=False)).rowcount
        db.refresh(user, ["role"])
        if not revoked:
            db.rollback()
            if user.role == "instructor":
                raise AccountError(gettext("%(who)s is the only instructor, so the role stays: somebody must still "
                                           "reach the instructor pages. Make another account an instructor first.",
                                           who=who))
            raise AccountError(gettext("%(who)s is not an instructor; nothing changed.", who=who))
    else:
        user.role = role
    end_sessions(user)
    tokens = revoke_tokens(user)
    db.commit()
    what = "granted the instructor role to" if role == "instructor" else "revoked the instructor role of"
    audit.warning("%s", printable(f"role change at {utcnow():%Y-%m-%dT%H:%M:%SZ}: {by} {what} {describe(user)}; "
                                 f"the account's sessions were ended and its {tokens} API token(s) revoked", None))
