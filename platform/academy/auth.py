"""Accounts: sign up, sign in (password hashed with werkzeug's scrypt KDF), guests, API tokens."""
from __future__ import annotations

import re

from flask import Blueprint, abort, flash, g, redirect, render_template, request, session, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import func, select
from werkzeug.security import check_password_hash, generate_password_hash

from academy.db import get_session
from academy.models import ApiToken, User
from academy.security import login_required, new_api_token

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
        raise AccountError("Enter a valid email address.")
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"Use a password of at least {MIN_PASSWORD} characters.")
    db = get_session()
    if db.scalar(select(User).where(func.lower(User.email) == email)) is not None:
        raise AccountError("An account with this email already exists. Sign in instead.")
    user = user or User()
    user.email, user.password_hash, user.role, user.is_guest = email, generate_password_hash(password), role, False
    db.add(user)
    return user


def _start_session(user: User) -> None:
    session.clear()  # a fresh session (and CSRF token) at every sign-in: no session fixation
    session.permanent = True
    session["user_id"] = user.id


def _safe_next(default: str) -> str:
    target = request.values.get("next", "")
    return target if target.startswith("/") and not target.startswith("//") else default


@bp.route("/signup", methods=["GET", "POST"])
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
        _start_session(user)
        flash("Your account is ready." + (" Your guest progress is kept." if guest else ""), "info")
        return redirect(_safe_next(url_for("index")))
    return render_template("auth/signup.html", email="")


@bp.route("/signin", methods=["GET", "POST"])
def signin() -> ResponseReturnValue:
    if request.method == "POST":
        email = request.form.get("email", "").strip().lower()
        user = get_session().scalar(select(User).where(func.lower(User.email) == email))
        if user is None or not user.password_hash or not check_password_hash(user.password_hash,
                                                                             request.form.get("password", "")):
            flash("Wrong email or password.", "error")
            return render_template("auth/signin.html", email=email), 401
        _start_session(user)
        return redirect(_safe_next(url_for("index")))
    return render_template("auth/signin.html", email="")


@bp.post("/guest")
def guest() -> ResponseReturnValue:
    """Start learning without an account; /auth/signup later keeps everything done as a guest."""
    if g.user is None:
        db = get_session()
        user = User(is_guest=True)
        db.add(user)
        db.commit()
        _start_session(user)
    return redirect(_safe_next(url_for("index")))


@bp.post("/signout")
def signout() -> ResponseReturnValue:
    session.clear()
    return redirect(url_for("index"))


@bp.route("/account")
@login_required
def account(new_token: str | None = None) -> ResponseReturnValue:
    tokens = get_session().scalars(select(ApiToken).where(ApiToken.user_id == g.user.id)
                                   .order_by(ApiToken.created_at.desc())).all()
    return render_template("auth/account.html", tokens=tokens, new_token=new_token)


@bp.post("/tokens")
@login_required
def create_token() -> ResponseReturnValue:
    if g.user.is_guest:
        abort(403, description="Create an account first: guests cannot have API tokens.")
    name = request.form.get("name", "").strip()[:100] or "token"
    token = new_api_token(g.user, name)
    get_session().commit()
    # Rendered in this response only (not put in the cookie session, which is signed, not encrypted).
    return account(new_token=token)


@bp.post("/tokens/<int:token_id>/revoke")
@login_required
def revoke_token(token_id: int) -> ResponseReturnValue:
    db = get_session()
    token = db.get(ApiToken, token_id)
    if token is None or token.user_id != g.user.id:
        abort(404)
    db.delete(token)
    db.commit()
    flash(f"Token '{token.name}' revoked.", "info")
    return redirect(url_for("auth.account"))
