"""Confirmed email addresses: links mailed to an address, opened with the account's password.

An address is what an LMS's gradebook import matches a learner by (academy/gradebook.py), so it counts only
once its owner proved it is theirs: the sign-up mails a link (academy/mail.py); whoever opens it and types the
account's password (or is signed in to that account already) confirms it. Both halves are needed: the link
alone would let anyone who signs up with somebody else's address get it confirmed by its owner's one careless
click; the password alone proves nothing about the mailbox.

A sign-up whose address an unconfirmed account already holds is not refused (whoever signed up first could
hold a victim's address forever): it is kept as a `PendingSignup`, and a link goes to the address. Whoever
opens it with that sign-up's password gets the account, the address confirmed, and the unconfirmed holder
loses the address (their account and work stay, without an email). A confirmed address is refused as before.

A link is signed (itsdangerous, with this module's salt: no other signed value of the site is one), expires
after DLA_EMAIL_CONFIRM_HOURS, names one account or one pending sign-up and the address it was sent to: it
dies when the account's address changes or is confirmed, or when the pending sign-up was used.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from flask import current_app, request, url_for
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import delete, func, select, update
from werkzeug.security import check_password_hash

from academy import mail
from academy.accounts import gettext
from academy.db import get_session
from academy.models import PendingSignup, User, utcnow
from academy.settings import settings

SALT = "academy.confirm-email"
RESEND_EVERY = timedelta(minutes=5)  # a new link for one account at most this often
PENDING_PER_ADDRESS = 3  # sign-ups waiting at once for one address; a new one replaces the oldest


class LinkError(ValueError):
    """Why a confirmation link cannot be used (a learner-facing message)."""


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.secret_key, salt=SALT)  # type: ignore[arg-type]


def _max_age() -> int:
    return int(settings().email_confirm_hours * 3600)


def _absolute(path: str) -> str:
    """`path` (from url_for) as a link a mail can hold: DLA_PUBLIC_URL's origin, else this request's own where
    its host is one of DLA_ALLOWED_HOSTS (never a Host header a client chose); else the path alone."""
    config = settings()
    if config.public_url:
        return config.public_url + path[len(request.script_root):]
    host = urlsplit(f"//{request.host}").hostname
    return request.host_url.rstrip("/") + path if host in config.allowed_hosts else path


def link(payload: dict[str, Any]) -> str:
    return _absolute(url_for("auth.confirm_email", token=_serializer().dumps(payload)))


@dataclass
class Target:
    """What a valid link names: an unconfirmed account (`user`) or a pending sign-up (`pending`)."""
    email: str
    user: User | None = None
    pending: PendingSignup | None = None


def target(token: str) -> Target:
    """What `token` confirms, if it still may (LinkError otherwise)."""
    try:
        payload = _serializer().loads(token, max_age=_max_age())
    except SignatureExpired:
        raise LinkError(gettext("This confirmation link has expired. Sign in and ask for a new one on your "
                                "account page, or sign up again.")) from None
    except BadSignature:
        raise LinkError(gettext("This confirmation link is not valid. Copy the whole link from the mail.")) from None
    dead = LinkError(gettext("This confirmation link was used already or is no longer valid."))
    if not isinstance(payload, dict) or not isinstance(payload.get("e"), str):
        raise dead
    db = get_session()
    if isinstance(payload.get("u"), int):
        user = db.get(User, payload["u"])
        if user is None or user.email != payload["e"] or user.email_confirmed_at is not None:
            raise dead
        return Target(payload["e"], user=user)
    if isinstance(payload.get("p"), int):
        pending = db.get(PendingSignup, payload["p"])
        if pending is None or pending.email != payload["e"] or pending.created_at < utcnow() - timedelta(
                seconds=_max_age()):
            raise dead
        return Target(payload["e"], pending=pending)
    raise dead


def _mail(to: str, url: str, *, pending: bool) -> mail.Sent:
    """The mail with the link, in the language of the page that asked for it."""
    if pending:
        opening = gettext("A sign-up on this site used your address (%(address)s). If it was you, open this link "
                          "and enter the password you chose to finish creating your account:", address=to)
    else:
        opening = gettext("Confirm that %(address)s is your address: open this link and enter your account's "
                          "password (or open it where you are signed in):", address=to)
    closing = " ".join([gettext("The link works for %(num)d hours.", num=settings().email_confirm_hours),
                        gettext("If you did not sign up, ignore this mail: nothing happens without the password.")])
    return mail.send(to, gettext("Confirm your email address"), f"{opening}\n\n{url}\n\n{closing}\n")


def send_for_user(user: User) -> mail.Sent:
    """Mail `user` a link for their current address (the caller checked the rate and commits)."""
    user.confirmation_sent_at = utcnow()
    return _mail(user.email, link({"u": user.id, "e": user.email}), pending=False)  # type: ignore[arg-type]


def next_link_in(user: User) -> int:
    """Seconds until `user` may ask for another link (0: now)."""
    if user.confirmation_sent_at is None:
        return 0
    left = (user.confirmation_sent_at + RESEND_EVERY - utcnow()).total_seconds()
    return int(left) + 1 if left > 0 else 0


def start_pending(email: str, name: str | None, password_hash: str, guest: User | None) -> mail.Sent:
    """Keep a sign-up for `email`, which an unconfirmed account holds, and mail the address its link (committed
    first: the row must exist when the link is opened). At most PENDING_PER_ADDRESS wait per address: a new one
    replaces the oldest, so nobody can keep the owner's own sign-up out by signing up with the address first
    (how many mails an address gets is bounded by the sign-up limit per client address)."""
    db = get_session()
    since = utcnow() - timedelta(seconds=_max_age())
    db.execute(delete(PendingSignup).where(PendingSignup.created_at < since))  # expired: nobody can use them
    kept = db.scalars(select(PendingSignup.id).where(PendingSignup.email == email)
                      .order_by(PendingSignup.id.desc()).limit(PENDING_PER_ADDRESS - 1)).all()
    db.execute(delete(PendingSignup).where(PendingSignup.email == email, PendingSignup.id.not_in(kept))
               .execution_options(synchronize_session=False))
    pending = PendingSignup(email=email, name=name, password_hash=password_hash,
                            guest_id=guest.id if guest is not None else None)
    db.add(pending)
    db.commit()
    return _mail(email, link({"p": pending.id, "e": email}), pending=True)


def password_matches(found: Target, password: str, signed_in: User | None) -> bool:
    """Whether the opener is the one who signed up: signed in to that account, or typing its password."""
    if found.user is not None:
        if signed_in is not None and signed_in.id == found.user.id:
            return True
        return bool(found.user.password_hash) and check_password_hash(found.user.password_hash, password)
    assert found.pending is not None
    return check_password_hash(found.pending.password_hash, password)


class Taken(Exception):
    """The address has a confirmed account now (another link or an operator got there first)."""


def confirm(found: Target) -> User | None:
    """Confirm what `found` names (the caller checked the password, and commits). The account, or None when
    another request used the same link first. Taken when a confirmed account holds the address."""
    db = get_session()
    now = utcnow()
    if found.user is not None:
        # One statement, so two openings at once confirm once and neither fails.
        done = db.execute(update(User).where(User.id == found.user.id, User.email == found.email,
                                             User.email_confirmed_at.is_(None))
                          .values(email_confirmed_at=now).execution_options(synchronize_session=False))
        if done.rowcount != 1:  # type: ignore[attr-defined]
            return None
        db.refresh(found.user)
        return found.user
    pending = found.pending
    assert pending is not None
    # Claimed by deleting it: of two openings at once, one deletes the row, the other finds nothing.
    claimed = db.execute(delete(PendingSignup).where(PendingSignup.id == pending.id)
                         .execution_options(synchronize_session=False))
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        return None
    holder = db.scalar(select(User).where(func.lower(User.email) == found.email))
    if holder is not None:
        if holder.email_confirmed_at is not None:
            raise Taken
        holder.email = None  # the unconfirmed holder loses the address; never confirmed for them
        db.flush()
    guest = db.get(User, pending.guest_id) if pending.guest_id is not None else None
    user = guest if guest is not None and guest.is_guest else User()
    user.email, user.password_hash, user.name = found.email, pending.password_hash, pending.name
    user.role, user.is_guest, user.email_confirmed_at = "learner", False, now
    user.end_sessions()  # no copy of the guest's cookie becomes the account
    db.add(user)
    db.flush()
    return user


def confirm_by_operator(email: str) -> User | None:
    """An operator vouches for an address (for `flask --app academy confirm-email ADDRESS`, cli.py): the
    account holding it counts as confirmed. None when no account holds it. The caller commits."""
    user = get_session().scalar(select(User).where(func.lower(User.email) == email.strip().lower()))
    if user is not None and user.email_confirmed_at is None:
        user.email_confirmed_at = utcnow()
    return user


def confirm_all_by_operator() -> int:
    """An operator vouches for every address stored so far (after the upgrade to migration 0011, on a site whose
    operator made or checked its accounts: `flask --app academy confirm-email --all`, cli.py); how many were
    unconfirmed. The caller commits."""
    done = get_session().execute(update(User).where(User.email.is_not(None), User.email_confirmed_at.is_(None))
                                 .values(email_confirmed_at=utcnow()).execution_options(synchronize_session=False))
    return done.rowcount or 0  # type: ignore[attr-defined]
