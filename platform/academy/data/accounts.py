"""Accounts as every process makes them: the web's sign-up, `flask --app academy create-user`, an LTI
launch's first visit; API tokens. It imports no part of the web front (Flask-Babel, Flask-Limiter, the
blueprints), so an administrator's command that makes an account starts fast (docs/web.md, "What starting
costs"); its messages are translated where a page shows them (`gettext` below)."""
from __future__ import annotations

import re
import secrets
import unicodedata
from typing import Any

from flask import has_request_context
from sqlalchemy import delete, func, select
from werkzeug.security import generate_password_hash

from academy.data.db import get_session
from academy.data.models import NAME_MAX, SIS_ID_MAX, ApiToken, User, utcnow
from academy.settings import settings

TOKEN_PREFIX = "dla_"


def gettext(message: str, **variables: Any) -> str:
    """`message` in the page's language within a request (Flask-Babel), else English (a command's output)."""
    if has_request_context():
        from flask_babel import gettext as translated

        return translated(message, **variables)
    return message % variables if variables else message


# Letters and digits of any script and the punctuation RFC 5322 allows unquoted in an address, less what a
# spreadsheet or a CSV reader could split a cell on or read as quoting (, ; | " `) and every space or
# control character: an address is text in one cell of the gradebook (gradebook.py), whatever reads it.
# An apostrophe stays allowed: o'brien@example.org is a real address, and harmless inside a cell.
_LOCAL = r"[\w!#$%&'*+/=?^{}~.-]+"
_LABEL = r"[^\W_](?:[\w-]*[^\W_])?"
EMAIL = re.compile(rf"{_LOCAL}@{_LABEL}(?:\.{_LABEL})+")
MIN_PASSWORD = 8


class AccountError(ValueError):
    """A learner-facing reason why an account could not be created."""


class AddressUnconfirmed(AccountError):
    """A sign-up's address is held by an account that never confirmed it: not refused, but kept until the
    address's owner confirms it (academy/web/confirmation.py). Carries what the sign-up gave, checked."""

    def __init__(self, email: str, password: str, name: str | None):
        super().__init__(email)
        self.email, self.password, self.name = email, password, name


def _printable(text: str) -> bool:
    """No control, format, private-use or unassigned character, and no line or paragraph separator: text that
    stays one line in one cell of any gradebook (what could start a formula there is neutralised on export)."""
    return all(unicodedata.category(ch)[0] != "C" and unicodedata.category(ch) not in ("Zl", "Zp") for ch in text)


def clean_name(name: str, *, required: bool = True) -> str | None:
    """A display name as typed, its runs of spaces made one; AccountError when it is missing (and required),
    too long or not printable text."""
    if not _printable(name.strip("\r\n\t ")):  # what a browser's form may add around it is no part of it
        raise AccountError(gettext("A name cannot hold control characters or line breaks."))
    name = " ".join(name.split())
    if not name:
        if required:
            raise AccountError(gettext("Enter your name as your course knows it."))
        return None
    if len(name) > NAME_MAX:
        raise AccountError(gettext("Use a name of at most %(num)d characters.", num=NAME_MAX))
    return name


def clean_sis_id(sis_id: str, *, user: User | None = None) -> str | None:
    """An SIS id (Canvas's "SIS User ID"), or None when empty; AccountError when it is too long, not printable,
    or another account has it already."""
    sis_id = sis_id.strip()
    if not sis_id:
        return None
    if len(sis_id) > SIS_ID_MAX or not _printable(sis_id) or any(ch.isspace() for ch in sis_id):
        raise AccountError(gettext("An SIS id is at most %(num)d characters, without spaces or control characters.",
                                   num=SIS_ID_MAX))
    other = get_session().scalar(select(User).where(User.sis_id == sis_id))
    if other is not None and (user is None or other.id != user.id):
        raise AccountError(gettext("Another account already has the SIS id %(id)s.", id=sis_id))
    return sis_id


def password_hash(password: str) -> str:
    """`password` hashed with the app's method (DLA_PASSWORD_HASH: werkzeug's scrypt unless set)."""
    return generate_password_hash(password, method=settings().password_hash)


def create_account(email: str, password: str, *, role: str = "learner", user: User | None = None,
                   name: str | None = None, confirmed: bool = True) -> User:
    """A new account, or `user` (a guest) turned into one, keeping its id and so all its progress. `name` is
    the display name (sign-up requires one; None: none, as `create-user` without --name).

    `confirmed`: whether the address counts as the account owner's from the start: true for an operator's
    `create-user` (the operator vouches), false for the web's sign-up (a link confirms it: confirmation.py),
    which then gets AddressUnconfirmed, not a refusal, for an address that an unconfirmed account holds.
    An address a confirmed account holds is refused either way.

    The caller commits.
    """
    email = email.strip().lower()
    if not EMAIL.fullmatch(email) or len(email) > 254:
        raise AccountError(gettext("Enter a valid email address."))
    if len(password) < MIN_PASSWORD:
        raise AccountError(gettext("Use a password of at least %(num)d characters.", num=MIN_PASSWORD))
    display = clean_name(name) if name is not None else None
    db = get_session()
    holder = db.scalar(select(User).where(func.lower(User.email) == email))
    if holder is not None:
        if not confirmed and holder.email_confirmed_at is None:
            raise AddressUnconfirmed(email, password, display)
        raise AccountError(gettext("An account with this email already exists. Sign in instead."))
    user = user or User()
    user.email, user.password_hash, user.role, user.is_guest = email, password_hash(password), role, False
    user.name = display
    user.email_confirmed_at = utcnow() if confirmed else None
    db.add(user)
    return user


def hash_token(token: str) -> str:
    import hashlib

    return hashlib.sha256(token.encode()).hexdigest()


def new_api_token(user: User, name: str) -> str:
    """Create a token for `user` (caller commits) and return it: the only time it is visible."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    get_session().add(ApiToken(user=user, name=name, token_hash=hash_token(token), prefix=token[:10]))
    return token


def revoke_tokens(user: User) -> int:
    """Delete every API token of `user` (the caller commits); how many there were."""
    done = get_session().execute(delete(ApiToken).where(ApiToken.user_id == user.id)
                                 .execution_options(synchronize_session=False))
    return done.rowcount or 0  # type: ignore[attr-defined]
