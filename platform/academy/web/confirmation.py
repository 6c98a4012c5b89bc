"""Confirmed email addresses: links mailed to an address, opened with the account's password.

An address is what an LMS's gradebook import matches a learner by (academy/data/gradebook.py), so it counts only
once its owner proved it is theirs: the sign-up mails a link (academy/web/mail.py); whoever opens it and types the
account's password (or is signed in to that account already) confirms it. Both halves are needed: the link
alone would let anyone who signs up with somebody else's address get it confirmed by its owner's one careless
click; the password alone proves nothing about the mailbox.

A sign-up whose address an unconfirmed account already holds is not refused (whoever signed up first could
hold a victim's address forever), and it keeps nothing of what it typed: it mails the address a sign-up link,
which proves the mailbox alone. Whoever opens it chooses the new account's password there (and a name), gets
the account, the address confirmed, and the unconfirmed holder loses the address (their account and work stay,
without an email). No sign-up is tied to a link, so nobody can make a link die by signing up after its owner:
every sign-up link mailed to the address works for whoever reads the mailbox, until it expires or the address
is confirmed. Nothing the sign-up typed (a password, a name, a guest's work) reaches the account: it may be
the squatter's. The mails are bounded per recipient, whoever asks: at most one sign-up link per RESEND_EVERY
and SIGNUP_LINKS_PER_ADDRESS per signup_link_window() (a day, or the link's lifetime where shorter), logged as
`SignupLinkMail` rows; a sign-up that sends none says a link reached the address within the window, and that
link still works (the window is never longer than a link's life). An account's own link (the "send a new
link" button) goes at most once per RESEND_EVERY and ACCOUNT_LINKS_PER_DAY a day. A confirmed address is
refused as before.

A link is signed (itsdangerous, with this module's salt: no other signed value of the site is one), expires
after DLA_EMAIL_CONFIRM_HOURS, and names one account and its address (it dies when the account's address
changes or is confirmed), or only an address (a sign-up link: it dies when a confirmed account holds it).
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

from academy.data.accounts import gettext, password_hash
from academy.data.db import get_session
from academy.data.models import SignupLinkMail, User, utcnow
from academy.settings import settings
from academy.web import mail

SALT = "academy.confirm-email"
RESEND_EVERY = timedelta(minutes=5)  # a new link to one account, or one address's sign-up link, at most this often
SIGNUP_LINKS_PER_ADDRESS = 3  # sign-up links mailed to one address per signup_link_window(), whoever signs up
ACCOUNT_LINKS_PER_DAY = 6  # an account's own links ("send a new link") a day, the sign-up's mail included


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
    """What a valid link names: an unconfirmed account (`user`), or an address to make an account for
    (`pending`: a sign-up link, whose opener chooses the password)."""
    email: str
    user: User | None = None
    pending: bool = False
    held: bool = False  # a sign-up link's address is held by an unconfirmed account now


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
    # A sign-up link ("p": a sign-up's id, from before sign-up links named only the address, reads the same).
    if payload.get("s") is True or isinstance(payload.get("p"), int):
        holder = db.scalar(select(User).where(func.lower(User.email) == payload["e"].lower()))
        if holder is not None and holder.email_confirmed_at is not None:
            raise dead
        return Target(payload["e"], pending=True, held=holder is not None)
    raise dead


def _mail(to: str, url: str, *, pending: bool) -> mail.Sent:
    """The mail with the link, in the language of the page that asked for it."""
    if pending:
        opening = gettext("Someone (you, we hope) signed up on this site with your address (%(address)s). To "
                          "create your account, open this link and choose your password there:", address=to)
        closing = " ".join([gettext("The link works for %(num)d hours.", num=settings().email_confirm_hours),
                            gettext("If you did not sign up, ignore this mail: nothing happens unless the link is "
                                    "opened. Do not pass the link on: whoever opens it gets the account.")])
    else:
        opening = gettext("Confirm that %(address)s is your address: open this link and enter your account's "
                          "password (or open it where you are signed in):", address=to)
        closing = " ".join([gettext("The link works for %(num)d hours.", num=settings().email_confirm_hours),
                            gettext("If you did not sign up, ignore this mail: nothing happens without the "
                                    "password.")])
    return mail.send(to, gettext("Confirm your email address"), f"{opening}\n\n{url}\n\n{closing}\n")


def send_for_user(user: User) -> mail.Sent | None:
    """Mail `user` a link for their current address (the caller checked the rate and commits); None, sending
    nothing, when the address had ACCOUNT_LINKS_PER_DAY of them today (the button cannot mail someone's
    address every RESEND_EVERY forever)."""
    user.confirmation_sent_at = utcnow()
    if not _account_link_allowed(user.email):  # type: ignore[arg-type]
        return None
    return _mail(user.email, link({"u": user.id, "e": user.email}), pending=False)  # type: ignore[arg-type]


def _account_link_allowed(email: str) -> bool:
    """One more of an account's own links to `email` today: counted in the rate limits' storage (Redis where
    REDIS_URL is set, shared by every web process; else this process's memory), whichever account asks."""
    from limits import RateLimitItemPerDay

    from academy.web.limits import limiter

    if not limiter.enabled:  # RATELIMIT_ENABLED = False: only the per-account RESEND_EVERY holds
        return True
    return limiter.limiter.hit(RateLimitItemPerDay(ACCOUNT_LINKS_PER_DAY), "confirm-mail", email.lower())


def next_link_in(user: User) -> int:
    """Seconds until `user` may ask for another link (0: now)."""
    if user.confirmation_sent_at is None:
        return 0
    left = (user.confirmation_sent_at + RESEND_EVERY - utcnow()).total_seconds()
    return int(left) + 1 if left > 0 else 0


def signup_link_window() -> timedelta:
    """How far back sign-up links to one address are counted: a day, or a link's lifetime where shorter (so a
    sign-up that sends none can say that a link sent within it still works)."""
    return min(timedelta(days=1), timedelta(seconds=_max_age()))


def mail_signup_link(email: str) -> mail.Sent | None:
    """A sign-up for `email`, which an unconfirmed account holds: mail the address a sign-up link, unless one
    went within RESEND_EVERY or SIGNUP_LINKS_PER_ADDRESS within signup_link_window() (whoever asked): then None, and
    nothing is sent (the links already in the mailbox work). Each mail is logged (committed) as a
    SignupLinkMail row, which carries nothing of the sign-up: the link's opener chooses the password."""
    db = get_session()
    now = utcnow()
    window = signup_link_window()
    db.execute(delete(SignupLinkMail).where(SignupLinkMail.sent_at < now - max(window, timedelta(days=1))))
    sent_at = db.scalars(select(SignupLinkMail.sent_at).where(SignupLinkMail.email == email,
                                                              SignupLinkMail.sent_at >= now - window)).all()
    if len(sent_at) >= SIGNUP_LINKS_PER_ADDRESS or any(at > now - RESEND_EVERY for at in sent_at):
        db.commit()
        return None
    row = SignupLinkMail(email=email, sent_at=now)
    db.add(row)
    db.commit()  # before the mail: of two sign-ups at once, the later one mostly sees it and sends none
    sent = _mail(email, link({"s": True, "e": email}), pending=True)
    if sent is mail.Sent.FAILED:  # nothing reached the mailbox: the next sign-up may try again at once
        db.execute(delete(SignupLinkMail).where(SignupLinkMail.id == row.id))
        db.commit()
    return sent


def password_matches(found: Target, password: str, signed_in: User | None) -> bool:
    """Whether the opener of an account's link is its owner: signed in to that account, or typing its
    password. (A sign-up link needs none: its opener chooses the password.)"""
    assert found.user is not None
    if signed_in is not None and signed_in.id == found.user.id:
        return True
    return bool(found.user.password_hash) and check_password_hash(found.user.password_hash, password)


class Taken(Exception):
    """The address has a confirmed account now (another link or an operator got there first)."""


def confirm(found: Target, *, password: str | None = None, name: str | None = None,
            guest: User | None = None) -> User | None:
    """Confirm what `found` names (the caller checked the password, and commits). The account, or None when
    another request used the same link first. Taken when a confirmed account holds the address.

    A sign-up link makes the account with the `password` and `name` its opener chose, from `guest` (the
    opener's own browser's guest, whose work it keeps) or new; two openings at once both insert the address,
    and the second fails on its unique index (IntegrityError, which the caller answers)."""
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
    assert found.pending and password is not None
    holder = db.scalar(select(User).where(func.lower(User.email) == found.email.lower()))
    if holder is not None:
        if holder.email_confirmed_at is not None:
            raise Taken
        holder.email = None  # the unconfirmed holder loses the address; never confirmed for them
        db.flush()
    user = guest if guest is not None and guest.is_guest else User()
    user.email, user.password_hash, user.name = found.email, password_hash(password), name
    user.role, user.is_guest, user.email_confirmed_at = "learner", False, now
    user.end_sessions()  # no copy of the guest's cookie becomes the account
    db.add(user)
    db.flush()
    db.execute(delete(SignupLinkMail).where(SignupLinkMail.email == found.email)
               .execution_options(synchronize_session=False))
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
