"""Wrong passwords slow a guesser down, and never lock the account's owner out (OWASP's device cookies).

OWASP's authentication cheat sheet advises against locking accounts (anyone who knows an email could lock
its owner out) and "Slow Down Online Guessing Attacks with Device Cookies" describes the remedy followed here:

- A browser that signed in to an account before holds a **device cookie** for it (signed, issued at every
  sign-in and sign-up). Its attempts at that account count only against that cookie: what others typed,
  from anywhere (the same school network included), never slows it down. Each entry is bound to the
  account's device secret and password hash (`_binding`): a password change or "sign out everywhere else"
  makes every device cookie issued before count for nothing (the browser that did it gets a new one); a
  sign-out does not, so the owner's browsers stay known.
- Every other attempt counts against the **account** (its email as typed, known or not, so the answers do
  not tell which emails have accounts) and against the **client address**.
- Under each key the first wrong passwords are free (DLA_SIGNIN_FREE_FAILURES, more per address:
  DLA_SIGNIN_FREE_FAILURES_PER_ADDRESS, a classroom behind one NAT); after them each further attempt waits
  DLA_SIGNIN_FIRST_DELAY_S after the last wrong one, doubling with every wrong password up to
  DLA_SIGNIN_MAX_DELAY_S. A delay, never a lock: once it has passed, the next attempt is checked. A key is
  forgotten a day after its last wrong password.

An attempt is counted before its password is checked, and given back when the password is right: the
counters live in the database (shared by every web process), and a reservation is a compare-and-swap of the
key's row, so concurrent attempts when a delay ends get one try between them, not one each.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from flask import Response, current_app, request
from flask_babel import gettext
from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from academy.data.db import get_session
from academy.data.models import SigninFailure, User, utcnow
from academy.settings import settings
from academy.web.limits import client_address

DEVICE_COOKIE = "dla_device"
DEVICE_MAX_AGE = timedelta(days=180)
DEVICES_PER_BROWSER = 5  # accounts one browser is remembered for (a family computer)
FORGET_AFTER = timedelta(days=1)
_RESERVE_TRIES = 5


class BackingOff(Exception):
    """This attempt has to wait: `seconds`, and a learner-facing `message`."""

    def __init__(self, seconds: int, message: str):
        super().__init__(message)
        self.seconds, self.message = seconds, message


def _key(kind: str, value: str) -> str:
    """What a counter is stored under: hashed, so the emails people typed are not kept."""
    return f"{kind}:{hashlib.sha256(value.encode()).hexdigest()}"


def delay(failures: int, free: int) -> float:
    """Seconds an attempt waits after the last wrong password, when `failures` were counted and `free` are free."""
    if failures < free:
        return 0.0
    own = settings()
    return float(min(own.signin_max_delay_s, own.signin_first_delay_s * 2 ** min(failures - free, 40)))


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.secret_key, salt="academy.device-cookie")


def _binding(user: User, nonce: str) -> str:
    """What ties a device cookie's entry to `user` as the account is now: a MAC, under the app's secret key, of
    the user's id, the entry's nonce, the user's device secret and password hash. Replacing either (a password
    change, "sign out everywhere else": User.forget_devices) ends every entry issued before. Readable in the
    cookie, it tells nothing about the hash."""
    message = "\0".join((str(user.id), nonce, user.device_secret or "", user.password_hash or ""))
    secret = current_app.secret_key
    key = hashlib.sha256(b"academy.device-binding\0" + (secret.encode() if isinstance(secret, str) else secret))
    return hmac.new(key.digest(), message.encode(), hashlib.sha256).hexdigest()[:32]


def _devices() -> list[list]:
    """This browser's device cookie: [user id, nonce, binding] entries, newest first; [] when absent, forged or
    expired (entries of another shape, from before the binding, are left out)."""
    raw = request.cookies.get(DEVICE_COOKIE)
    if not raw:
        return []
    try:
        entries = _serializer().loads(raw, max_age=int(DEVICE_MAX_AGE.total_seconds()))
    except BadSignature:
        return []
    return [e for e in entries if isinstance(e, list) and len(e) == 3 and isinstance(e[0], int)
            and isinstance(e[1], str) and isinstance(e[2], str)] if isinstance(entries, list) else []


def device_nonce(user: User | None) -> str | None:
    """The nonce of this browser's device cookie for `user`, when it holds one still bound to the account as it
    is now (not from before a password change or "sign out everywhere else")."""
    if user is None:
        return None
    return next((nonce for user_id, nonce, binding in _devices() if user_id == user.id
                 and hmac.compare_digest(binding, _binding(user, nonce))), None)


def trust_this_browser(response: Response, user: User) -> None:
    """Issue (or renew) the device cookie after a successful sign-in or sign-up as `user`, or after this browser
    changed the password or signed out everywhere else (then with a new nonce: the old entry no longer holds)."""
    others = [entry for entry in _devices() if entry[0] != user.id]
    nonce = device_nonce(user) or secrets.token_urlsafe(16)
    entries = [[user.id, nonce, _binding(user, nonce)], *others][:DEVICES_PER_BROWSER]
    response.set_cookie(DEVICE_COOKIE, _serializer().dumps(entries), max_age=int(DEVICE_MAX_AGE.total_seconds()),
                        path="/", secure=not settings().insecure_cookies, httponly=True, samesite="Lax")


@dataclass(frozen=True)
class _Reserved:
    """An attempt counted under `key`: the row's version after it, and its last wrong password before it."""
    key: str
    version: int
    previous: datetime | None  # None: this attempt made the row (or started a forgotten one again)


@dataclass
class SigninAttempt:
    """One sign-in attempt at `email`: which counters it is counted under, and whether it may go ahead."""
    email: str
    user: User | None
    reserved: list[_Reserved] = field(default_factory=list)

    @property
    def device(self) -> str | None:
        return device_nonce(self.user)

    def keys(self) -> list[tuple[str, int]]:
        """(counter key, free failures): the device cookie's alone, or the account's and the address's."""
        own = settings()
        if self.device is not None:
            return [(_key("device", self.device), own.signin_free_failures)]
        return [(_key("account", self.email), own.signin_free_failures),
                (_key("address", client_address()), own.signin_free_failures_per_address)]

    def begin(self) -> None:
        """Count this attempt under every key, or raise BackingOff (nothing counted) while one has to wait.
        Every key is looked at before any is counted: an attempt refused for one key moves no other."""
        keys = self.keys()
        waits = [self._wait(self._row(key), free) for key, free in keys]
        if max(waits) > 0:
            raise self._backing_off(max(waits))
        try:
            for key, free in keys:
                self._reserve(key, free)
        except BackingOff:
            self._give_back()
            raise

    def succeeded(self) -> None:
        """The password was right: the attempt is given back, and a device cookie's own count starts again."""
        device = self.device
        self._give_back()
        if device is not None:
            get_session().execute(delete(SigninFailure).where(SigninFailure.key == _key("device", device)))
        get_session().commit()

    def _row(self, key: str) -> Any:
        return get_session().execute(select(SigninFailure.failures, SigninFailure.attempts,
                                            SigninFailure.last_failure_at).where(SigninFailure.key == key)).first()

    @staticmethod
    def _wait(row: Any, free: int) -> float:
        """Seconds an attempt under this row still waits (0: it may go ahead)."""
        if row is None or row.last_failure_at < utcnow() - FORGET_AFTER:
            return 0.0
        return (row.last_failure_at + timedelta(seconds=delay(row.failures, free)) - utcnow()).total_seconds()

    def _reserve(self, key: str, free: int) -> None:
        db = get_session()
        for _ in range(_RESERVE_TRIES):
            row, now = self._row(key), utcnow()
            if row is None:
                db.add(SigninFailure(key=key, failures=1, attempts=1, last_failure_at=now))
                try:
                    db.commit()
                except IntegrityError:  # another attempt made the row first: read it again
                    db.rollback()
                    continue
                self.reserved.append(_Reserved(key, 1, None))
                db.execute(delete(SigninFailure).where(SigninFailure.last_failure_at < now - FORGET_AFTER))
                db.commit()
                return
            wait = self._wait(row, free)
            if wait > 0:
                raise self._backing_off(wait)
            forgotten = row.last_failure_at < now - FORGET_AFTER
            # Compare-and-swap on the row's version: only if no other attempt was counted since this one read it.
            swapped = db.execute(update(SigninFailure).where(
                SigninFailure.key == key, SigninFailure.attempts == row.attempts,
            ).values(failures=1 if forgotten else row.failures + 1, attempts=row.attempts + 1,
                     last_failure_at=now)).rowcount
            db.commit()
            if swapped:
                self.reserved.append(_Reserved(key, row.attempts + 1, None if forgotten else row.last_failure_at))
                return
        raise self._backing_off(1)  # contended: try again in a second

    def _give_back(self) -> None:
        """Uncount the reserved attempts: the row as it was when nothing was counted since, else one failure less."""
        db = get_session()
        for mine in self.reserved:
            row = SigninFailure.key == mine.key
            if mine.previous is None:
                undone = db.execute(delete(SigninFailure).where(row, SigninFailure.attempts == mine.version)).rowcount
            else:
                undone = db.execute(update(SigninFailure).where(row, SigninFailure.attempts == mine.version).values(
                    failures=SigninFailure.failures - 1, last_failure_at=mine.previous)).rowcount
            if not undone:
                db.execute(update(SigninFailure).where(row, SigninFailure.failures > 0)
                           .values(failures=SigninFailure.failures - 1))
        db.commit()
        self.reserved.clear()

    def _backing_off(self, wait: float) -> BackingOff:
        seconds = max(1, math.ceil(wait))
        return BackingOff(seconds, self._message(seconds))

    def _message(self, seconds: int) -> str:
        if self.device is not None:
            return gettext("Too many wrong passwords from this browser; try again in %(seconds)s s.",
                           seconds=seconds)
        return gettext("Too many wrong passwords for this account or from your network; try again in "
                       "%(seconds)s s. A browser you signed in with before is not held back.", seconds=seconds)

