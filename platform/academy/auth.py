"""Accounts: sign up, sign in (password hashed with werkzeug's scrypt KDF), guests, API tokens."""
from __future__ import annotations

import functools
import re

from flask import Blueprint, abort, flash, g, redirect, render_template, request, session, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext
from sqlalchemy import func, select
from werkzeug.security import check_password_hash, generate_password_hash

from academy import progress
from academy.db import get_session
from academy.inputs import safe_next
from academy.limits import client_address, limit, limiter
from academy.models import ApiToken, User
from academy.security import end_other_sessions, login_required, new_api_token, no_store, start_session

bp = Blueprint("auth", __name__, url_prefix="/auth")

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
MIN_PASSWORD = 8


class AccountError(ValueError):
    """A learner-facing reason why an account could not be created."""


def create_account(email: str, password: str, *, role: str = "learner", user: User | None = None) -> User:
    """A new account, or `user` (a guest) turned into one, keeping its id and so all its progress.

    The caller commits.
    """
    email = email.strip().lower()
    if not EMAIL.match(email) or len(email) > 254:
        raise AccountError(gettext("Enter a valid email address."))
    if len(password) < MIN_PASSWORD:
        raise AccountError(gettext("Use a password of at least %(num)d characters.", num=MIN_PASSWORD))
    db = get_session()
    if db.scalar(select(User).where(func.lower(User.email) == email)) is not None:
        raise AccountError(gettext("An account with this email already exists. Sign in instead."))
    user = user or User()
    user.email, user.password_hash, user.role, user.is_guest = email, generate_password_hash(password), role, False
    db.add(user)
    return user


def _safe_next(default: str) -> str:
    return safe_next(request.values.get("next"), default)


@functools.cache
def _dummy_hash() -> str:
    """A hash of the same kind as real ones: an unknown email costs the same scrypt work as a known one."""
    return generate_password_hash("no account has this password")


def check_password(user: User | None, password: str) -> bool:
    """Whether `password` is `user`'s, in the same time whether or not the account exists."""
    if user is None or not user.password_hash:
        check_password_hash(_dummy_hash(), password)
        return False
    return check_password_hash(user.password_hash, password)


def _signin_key() -> str:
    # Back-off per (account, client address): someone elsewhere guessing an instructor's password
    # cannot lock the instructor out.
    return f"{request.form.get('email', '').strip().lower()}|{client_address()}"


_POST = ["POST"]


@bp.route("/signup", methods=["GET", "POST"])
@limiter.limit(limit("limit_signups_per_address"), methods=_POST,
               error_message=lambda: gettext("Too many sign-ups from your network; try again later."))
def signup() -> ResponseReturnValue:
    if request.method == "POST":
        db = get_session()
        guest = g.user if g.user is not None and g.user.is_guest else None
        try:
            user = create_account(request.form.get("email", ""), request.form.get("password", ""), user=guest)
        except AccountError as exc:
            flash(str(exc), "error")
            return render_template("auth/signup.html", email=request.form.get("email", "")), 400
        db.commit()
        start_session(user)
        flash(gettext("Your account is ready. Your guest progress is kept.") if guest else
              gettext("Your account is ready."), "info")
        return redirect(_safe_next(url_for("index")))
    return render_template("auth/signup.html", email="")


@bp.route("/signin", methods=["GET", "POST"])
@limiter.limit(limit("limit_signins_per_address"), methods=_POST,
               error_message=lambda: gettext("Too many sign-in attempts from your network; try again later."))
@limiter.limit(limit("limit_signin_failures"), methods=_POST, key_func=_signin_key,
               deduct_when=lambda response: response.status_code == 401,
               error_message=lambda: gettext("Too many wrong passwords for this account from here; wait before "
                                             "trying again."))
def signin() -> ResponseReturnValue:
    if request.method == "POST":
        email = request.form.get("email", "").strip().lower()
        user = get_session().scalar(select(User).where(func.lower(User.email) == email))
        if not check_password(user, request.form.get("password", "")):
            flash(gettext("Wrong email or password."), "error")
            return render_template("auth/signin.html", email=email), 401
        guest = g.user if g.user is not None and g.user.is_guest and g.user.id != user.id else None
        start_session(user)
        target = _safe_next(url_for("index"))
        if guest is not None and progress.has_progress(guest):
            # Offer to keep what was done as a guest (auth.merge); the guest id travels in the signed cookie.
            session["merge_guest"] = guest.id
            return redirect(url_for("auth.merge", next=target))
        return redirect(target)
    return render_template("auth/signin.html", email="")


@bp.route("/merge", methods=["GET", "POST"])
@login_required
def merge() -> ResponseReturnValue:
    """After signing in from a guest session: merge the guest's progress into the account, or leave it."""
    db = get_session()
    guest_id = session.get("merge_guest")
    guest = db.get(User, guest_id) if isinstance(guest_id, int) else None
    target = _safe_next(url_for("index"))
    if guest is None or not guest.is_guest or g.user.is_guest:
        session.pop("merge_guest", None)
        return redirect(target)
    if request.method == "POST":
        session.pop("merge_guest", None)
        if request.form.get("action") == "merge":
            progress.merge_guest(guest, g.user)
            db.commit()
            flash(gettext("Your guest progress is now part of your account."), "info")
        else:
            flash(gettext("Your guest progress was not merged; it is no longer reachable."), "info")
        return redirect(target)
    return render_template("auth/merge.html", summary=progress.summary(guest), next=target)


@bp.get("/signout")
@login_required
def signout_page() -> ResponseReturnValue:
    """Guests are warned before signing out: their progress is reachable only from this browser's session."""
    return render_template("auth/signout.html", summary=progress.summary(g.user))


@bp.post("/guest")
@limiter.limit(limit("limit_guests_per_address"),
               error_message=lambda: gettext("Too many new guests from your network; try again later, or sign in."))
def guest() -> ResponseReturnValue:
    """Start learning without an account; /auth/signup later keeps everything done as a guest."""
    if g.user is None:
        db = get_session()
        user = User(is_guest=True)
        db.add(user)
        db.commit()
        start_session(user)
    return redirect(_safe_next(url_for("index")))


@bp.post("/signout")
def signout() -> ResponseReturnValue:
    # The cookie is signed, not stored: clearing it here would leave any copy of it valid for 30 days.
    # Bumping the account's session version ends this session and every other one of the account.
    if g.user is not None:
        g.user.session_version += 1
        get_session().commit()
    session.clear()
    return redirect(url_for("index"))


@bp.post("/sessions/end-others")
@login_required
def end_others() -> ResponseReturnValue:
    """"Sign out everywhere else": every other browser (and copied cookie) of this account is signed out."""
    end_other_sessions(g.user)
    get_session().commit()
    flash(gettext("Every other session of your account is signed out."), "info")
    return redirect(url_for("auth.account"))


@bp.post("/password")
@login_required
def change_password() -> ResponseReturnValue:
    if g.user.is_guest:
        abort(403, description=gettext("Create an account first: guests have no password."))
    if not check_password(g.user, request.form.get("current", "")):
        flash(gettext("Your current password is not right."), "error")
        return redirect(url_for("auth.account")), 303
    new = request.form.get("new", "")
    if len(new) < MIN_PASSWORD:
        flash(gettext("Use a password of at least %(num)d characters.", num=MIN_PASSWORD), "error")
        return redirect(url_for("auth.account")), 303
    g.user.password_hash = generate_password_hash(new)
    end_other_sessions(g.user)  # whoever knew the old password is signed out everywhere else
    get_session().commit()
    flash(gettext("Password changed; every other session of your account is signed out."), "info")
    return redirect(url_for("auth.account"))


@bp.route("/account")
@login_required
@no_store
def account() -> ResponseReturnValue:
    return _account_page()


def _account_page(new_token: str | None = None) -> ResponseReturnValue:
    tokens = get_session().scalars(select(ApiToken).where(ApiToken.user_id == g.user.id)
                                   .order_by(ApiToken.created_at.desc())).all()
    return render_template("auth/account.html", tokens=tokens, new_token=new_token)


@bp.post("/tokens")
@login_required
@no_store
def create_token() -> ResponseReturnValue:
    if g.via_token:  # unreachable today (tokens only reach /api/), kept so a route move cannot reopen it
        abort(403, description=gettext("An API token cannot create tokens; use the account page while signed in."))
    if g.user.is_guest:
        abort(403, description=gettext("Create an account first: guests cannot have API tokens."))
    name = request.form.get("name", "").strip()[:100] or "token"
    token = new_api_token(g.user, name)
    get_session().commit()
    # Rendered in this response only (not put in the cookie session, which is signed, not encrypted).
    return _account_page(new_token=token)


@bp.post("/tokens/<int:token_id>/revoke")
@login_required
def revoke_token(token_id: int) -> ResponseReturnValue:
    db = get_session()
    token = db.get(ApiToken, token_id)
    if token is None or token.user_id != g.user.id:
        abort(404)
    db.delete(token)
    db.commit()
    flash(gettext("Token '%(name)s' revoked.", name=token.name), "info")
    return redirect(url_for("auth.account"))
