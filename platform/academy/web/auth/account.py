"""The account's page: sessions, password, name, API tokens, confirming the address."""
from __future__ import annotations

from flask import (
    abort,
    flash,
    g,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.typing import ResponseReturnValue
from flask_babel import gettext
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from academy.data import progress
from academy.data.accounts import (
    MIN_PASSWORD,
    AccountError,
    clean_name,
    password_hash,
    revoke_tokens,
)
from academy.data.db import get_session
from academy.data.models import ApiToken, User
from academy.web import backoff, confirmation
from academy.web.auth.blueprint import _flash_mail, bp, check_password
from academy.web.limits import spend, too_many
from academy.web.security import (
    end_other_sessions,
    login_required,
    new_api_token,
    no_store,
    start_session,
)


@bp.post("/sessions/end-others")
@login_required
def end_others() -> ResponseReturnValue:
    """"Sign out everywhere else": every other browser (and copied cookie) of this account is signed out, and
    no other browser's device cookie exempts it from the sign-in delays any more (this one gets a new one)."""
    end_other_sessions(g.user)
    g.user.forget_devices()
    revoked = revoke_tokens(g.user)  # a script's token is a session elsewhere too
    get_session().commit()
    flash(gettext("Every other session of your account is signed out. API tokens revoked: %(num)d.", num=revoked),
          "info")
    response = redirect(url_for("auth.account"))
    backoff.trust_this_browser(response, g.user)
    return response


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
    g.user.password_hash = password_hash(new)
    end_other_sessions(g.user)  # whoever knew the old password is signed out everywhere else,
    g.user.forget_devices()  # and no device cookie issued before exempts anyone from the sign-in delays,
    revoked = revoke_tokens(g.user)  # and no API token made with it (a thief's) submits any more
    get_session().commit()
    flash(gettext("Password changed; every other session of your account is signed out. API tokens revoked: "
                  "%(num)d.", num=revoked), "info")
    response = redirect(url_for("auth.account"))
    backoff.trust_this_browser(response, g.user)  # this browser, the owner's, stays known
    return response


@bp.post("/name")
@login_required
def change_name() -> ResponseReturnValue:
    """The account's display name (what instructors and the gradebooks show); a refused one changes nothing."""
    if g.user.is_guest:
        abort(403, description=gettext("Create an account first: guests have no name."))
    try:
        g.user.name = clean_name(request.form.get("name", ""))
    except AccountError as exc:
        flash(str(exc), "error")
        return redirect(url_for("auth.account")), 303
    get_session().commit()
    flash(gettext("Name saved."), "info")
    return redirect(url_for("auth.account")), 303


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
    db = get_session()
    # The session was checked when this request began; a password change or "sign out everywhere else" may have
    # committed since, after revoking the account's tokens. So the token is made only where the session's
    # secret is still the account's, checked by a write that holds the row until the token is committed: on
    # SQLite the write lock, on PostgreSQL the row lock. A change that commits first makes it match no row; one
    # that comes later waits for the token and revokes it.
    held = db.execute(update(User).where(User.id == g.user.id, User.session_secret == session.get("k"))
                      .values(session_secret=User.session_secret).execution_options(synchronize_session=False))
    if held.rowcount != 1:  # type: ignore[attr-defined]
        db.rollback()
        session.clear()
        abort(403, description=gettext("Your session was ended (a password change or a sign-out elsewhere); no "
                                       "token was made. Sign in again."))
    token = new_api_token(g.user, name)
    db.commit()
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


# -- confirmed email addresses (academy/web/confirmation.py) ------------------------------------------------

@bp.route("/confirm/<token>", methods=["GET", "POST"])
@no_store
def confirm_email(token: str) -> ResponseReturnValue:
    """A mailed link: GET shows what it confirms and asks for the password (a mail scanner that fetches links
    confirms nothing); POST confirms. An account's link, for the one who signed up: signed in to the account, or
    typing its password (with the sign-in's back-off: this is a password form too). A sign-up link (the
    mailbox is the proof): its opener chooses the new account's password, and is signed in here."""
    try:
        found = confirmation.target(token)
    except confirmation.LinkError as exc:
        abort(410, description=str(exc))
    mine = g.user is not None and found.user is not None and g.user.id == found.user.id
    page = {"email": found.email, "pending": found.pending, "held": found.held, "mine": mine,
            "min_password": MIN_PASSWORD,
            "name": request.form.get("name", "")}
    if request.method == "GET":
        return render_template("auth/confirm.html", **page)
    db = get_session()
    guest = g.user if g.user is not None and g.user.is_guest else None
    chosen = request.form.get("password", "")
    name: str | None = None
    if found.pending:
        try:
            if len(chosen) < MIN_PASSWORD:
                raise AccountError(gettext("Use a password of at least %(num)d characters.", num=MIN_PASSWORD))
            name = clean_name(request.form.get("name", ""), required=False)
        except AccountError as exc:
            flash(str(exc), "error")
            return render_template("auth/confirm.html", **page), 400
    elif not mine:
        assert found.user is not None
        attempt = backoff.SigninAttempt(found.user.email.lower(), found.user)  # type: ignore[union-attr]
        if attempt.device is None:
            spend("limit_signins_per_address", "signin",
                  lambda: gettext("Too many sign-in attempts from your network; try again later."))
        try:
            attempt.begin()  # counted before the password is checked, as at the sign-in form
        except backoff.BackingOff as wait:
            flash(wait.message, "error")
            return too_many(make_response(render_template("auth/confirm.html", **page)), wait.seconds)
        if not confirmation.password_matches(found, chosen, g.user):
            flash(gettext("That is not the password of the account with this address."), "error")
            return render_template("auth/confirm.html", **page), 401
        attempt.succeeded()
    try:
        user = confirmation.confirm(found, password=chosen, name=name, guest=guest)
        if user is None:
            db.rollback()
            abort(409, description=gettext("This confirmation link was used already or is no longer valid."))
        db.commit()
    except (confirmation.Taken, IntegrityError):
        db.rollback()
        abort(409, description=gettext("An account with this email already exists. Sign in instead."))
    # Like a sign-in: a guest this browser was (not the one that became the account) is left, and offered to
    # merge.
    if guest is not None and (mine or guest.id == user.id):
        guest = None
    if guest is not None:
        guest.end_sessions()
        db.commit()
    if not mine:
        start_session(user)
    flash(gettext("Your account is ready and %(email)s is confirmed.", email=found.email) if found.pending
          else gettext("%(email)s is confirmed.", email=found.email), "info")
    response = redirect(url_for("auth.account"), 303)
    if guest is not None and progress.has_progress(guest):
        session["merge_guest"] = {"id": guest.id, "k": guest.session_secret}
        response = redirect(url_for("auth.merge", next=url_for("auth.account")), 303)
    backoff.trust_this_browser(response, user)
    return response


@bp.post("/confirm")
@login_required
def send_confirmation() -> ResponseReturnValue:
    """A new link for the account's unconfirmed address (at most one every few minutes)."""
    user = g.user
    if user.is_guest or not user.email or user.email_confirmed_at is not None:
        flash(gettext("There is no address to confirm."), "info")
        return redirect(url_for("auth.account"), 303)
    wait = confirmation.next_link_in(user)
    if wait:
        flash(gettext("A link was sent a moment ago; you can ask for another in %(num)d seconds.", num=wait),
              "error")
        return redirect(url_for("auth.account"), 303)
    sent = confirmation.send_for_user(user)
    get_session().commit()
    _flash_mail(sent, user.email)
    return redirect(url_for("auth.account"), 303)
