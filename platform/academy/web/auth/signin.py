"""Sign up, sign in, guests, merging a guest into an account, sign out."""
from __future__ import annotations

import hmac

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
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from academy.data import progress
from academy.data.accounts import (
    AccountError,
    AddressUnconfirmed,
    create_account,
    revoke_tokens,
)
from academy.data.db import get_session
from academy.data.models import ApiToken, User, new_session_secret
from academy.web import backoff, confirmation
from academy.web.auth.blueprint import _flash_mail, _safe_next, bp, check_password
from academy.web.limits import limit, limiter, spend, spend_new_guest, too_many
from academy.web.security import (
    SIGNED_IN,
    login_required,
    start_session,
)

_POST = ["POST"]


def _token_count(user: User) -> int:
    return get_session().scalar(select(func.count()).select_from(ApiToken).where(ApiToken.user_id == user.id)) or 0


@bp.route("/signup", methods=["GET", "POST"])
@limiter.limit(limit("limit_signups_per_address"), methods=_POST,
               error_message=lambda: gettext("Too many sign-ups from your network; try again later."))
def signup() -> ResponseReturnValue:
    if request.method == "POST":
        db = get_session()
        guest = g.user if g.user is not None and g.user.is_guest else None
        typed = {"email": request.form.get("email", ""), "name": request.form.get("name", "")}
        try:
            user = create_account(typed["email"], request.form.get("password", ""), user=guest, name=typed["name"],
                                  confirmed=False)
            user.end_sessions()  # a copy of the guest's cookie must not become the account
            db.commit()
        except AddressUnconfirmed as held:
            return _pending_signup(held)
        except AccountError as exc:
            flash(str(exc), "error")
            return render_template("auth/signup.html", **typed), 400
        except IntegrityError:  # a sign-up for the same address committed between our check and our write
            db.rollback()
            flash(gettext("Another sign-up with this email address happened at the same moment. Try again."),
                  "error")
            return render_template("auth/signup.html", **typed), 409
        start_session(user)
        flash(gettext("Your account is ready. Your guest progress is kept.") if guest else
              gettext("Your account is ready."), "info")
        _flash_mail(confirmation.send_for_user(user), user.email)
        db.commit()  # when the link was sent (the rate of new links)
        response = redirect(_safe_next(url_for("index")))
        backoff.trust_this_browser(response, user)
        return response
    return render_template("auth/signup.html", email="", name="")


def _pending_signup(held: AddressUnconfirmed) -> ResponseReturnValue:
    """A sign-up whose address an unconfirmed account holds: a sign-up link mailed to the address (at most so
    often per address); whoever opens it chooses the password and gets the account (confirmation.py). Nothing
    the sign-up typed is kept, and nothing is signed in meanwhile."""
    get_session().rollback()  # nothing of the failed attempt (the guest row is untouched)
    sent = confirmation.mail_signup_link(held.email)
    return render_template("auth/confirm_sent.html", sent=sent.value if sent is not None else "recent",
                           email=held.email,
                           hours=int(confirmation.signup_link_window().total_seconds() // 3600)), 202


@bp.route("/signin", methods=["GET", "POST"])
def signin() -> ResponseReturnValue:
    if request.method == "POST":
        db = get_session()
        email = request.form.get("email", "").strip().lower()
        user = db.scalar(select(User).where(func.lower(User.email) == email))
        attempt = backoff.SigninAttempt(email, user)
        if attempt.device is None:  # others' attempts from this network never hold back a known browser
            spend("limit_signins_per_address", "signin",
                  lambda: gettext("Too many sign-in attempts from your network; try again later."))
        try:
            attempt.begin()  # counted before the password is checked: concurrent guesses get one try
        except backoff.BackingOff as wait:
            flash(wait.message, "error")
            return too_many(make_response(render_template("auth/signin.html", email=email)), wait.seconds)
        if not check_password(user, request.form.get("password", "")):
            flash(gettext("Wrong email or password."), "error")
            return render_template("auth/signin.html", email=email), 401
        attempt.succeeded()
        guest = g.user if g.user is not None and g.user.is_guest and g.user.id != user.id else None
        if guest is not None:
            # This browser leaves the guest: every copy of the guest's cookie ends here, and only this
            # browser's new session can name the guest for the merge (by its new secret, not by its id).
            guest.end_sessions()
            db.commit()
        start_session(user)
        # Where the work is: an instructor lands on the instructor pages, a learner on the course.
        target = _safe_next(url_for("instructor.overview") if user.is_instructor else url_for("index"))
        response = redirect(target)
        if guest is not None and progress.has_progress(guest):
            session["merge_guest"] = {"id": guest.id, "k": guest.session_secret}
            response = redirect(url_for("auth.merge", next=target))
        backoff.trust_this_browser(response, user)
        return response
    return render_template("auth/signin.html", email="")


def _guest_to_merge() -> User | None:
    """The guest this browser left when it signed in, if the merge offer still holds: the secret in the
    session must be the guest's current one (a merge or a refusal replaces it, so a replayed cookie cannot
    merge anyone, and a later user with the same id is never taken for the guest)."""
    state = session.get("merge_guest")
    if not isinstance(state, dict) or not isinstance(state.get("id"), int) or not isinstance(state.get("k"), str):
        return None
    guest = get_session().get(User, state["id"])
    if guest is None or not guest.is_guest or not hmac.compare_digest(state["k"], guest.session_secret):
        return None
    return guest


@bp.route("/merge", methods=["GET", "POST"])
@login_required
def merge() -> ResponseReturnValue:
    """After signing in from a guest session: merge the guest's progress into the account, or leave it."""
    db = get_session()
    guest = _guest_to_merge()
    target = _safe_next(url_for("index"))
    if guest is None or g.user.is_guest:
        session.pop("merge_guest", None)
        return redirect(target)
    if request.method == "POST":
        signed_in = session.get(SIGNED_IN)
        if request.form.get("action") == "merge":
            if not _claim(guest):
                return _merge_answered_already()
            progress.merge_guest(guest, g.user)
            # The account now holds the guest's work: like a sign-in, the merge rotates its session, so no
            # cookie of the account issued before (a copy taken while the offer stood, or another browser's,
            # which signs in again) reaches it.
            g.user.end_sessions()
            message = gettext("Your guest progress is now part of your account.")
        else:
            if not _claim(guest):
                return _merge_answered_already()
            message = gettext("Your guest progress was not merged; it is no longer reachable.")
        try:
            db.commit()
        except IntegrityError:  # another merge into this account (another guest) moved the same rows at once
            db.rollback()
            abort(409, description=gettext("Another change to your account happened at the same moment. "
                                           "Try again."))
        # A fresh session with the account's current secret: the merging browser stays in, and its sign-in time
        # stays (answering the offer is no sign-in: a copied cookie must not win 30 more days by it).
        start_session(g.user, signed_in=signed_in)
        flash(message, "info")
        return redirect(target)
    return render_template("auth/merge.html", summary=progress.summary(guest), next=target)


def _claim(guest: User) -> bool:
    """Answer the merge offer for `guest` once: its secret replaced in one statement that names the secret the
    offer holds (every copy of the guest's cookie ends with it). Of two answers at once (a merge and a
    refusal, or a double click), one replaces it; the other matches no row and is told so, never a 500."""
    db = get_session()
    done = db.execute(update(User).where(User.id == guest.id, User.is_guest.is_(True),
                                         User.session_secret == guest.session_secret)
                      .values(session_secret=new_session_secret()).execution_options(synchronize_session=False))
    if done.rowcount != 1:  # type: ignore[attr-defined]
        db.rollback()
        return False
    db.refresh(guest)
    return True


def _merge_answered_already() -> ResponseReturnValue:
    session.pop("merge_guest", None)
    abort(409, description=gettext("Your guest progress was merged or left already (in another tab or window)."))


@bp.get("/account-links")
def account_links() -> ResponseReturnValue:
    """The header's account links for whoever this browser is now: a page whose first Run or Submit made its
    visitor a guest shows "Save progress" and the guest's name without a reload."""
    response = make_response(render_template("_account.html"))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/signout")
@login_required
def signout_page() -> ResponseReturnValue:
    """Guests are warned before signing out: their progress is reachable only from this browser's session."""
    return render_template("auth/signout.html", summary=progress.summary(g.user), tokens=_token_count(g.user))


@bp.post("/guest")
def guest() -> ResponseReturnValue:
    """Start learning without an account; /auth/signup later keeps everything done as a guest."""
    if g.user is None:
        spend_new_guest()  # the same budget as a guest made by a first Run, Submit or quiz answer
        db = get_session()
        user = User(is_guest=True)
        db.add(user)
        db.commit()
        start_session(user)
    return redirect(_safe_next(url_for("index")))


@bp.post("/signout")
def signout() -> ResponseReturnValue:
    # The cookie is signed, not stored: clearing it here would leave any copy of it valid for 30 days.
    # A new session secret ends this session and every other one of the account. API tokens are no session:
    # they end only when asked (the sign-out page offers it), and the message says which happened.
    message: str | None = None
    if g.user is not None:
        g.user.end_sessions()
        if request.form.get("revoke_tokens"):
            message = gettext("Signed out. API tokens revoked: %(num)d.", num=revoke_tokens(g.user))
        elif not g.user.is_guest and (kept := _token_count(g.user)):
            message = gettext("Signed out. Your API tokens still work (%(num)d); to end them, sign in and revoke "
                              "them on your account page.", num=kept)
        get_session().commit()
    session.clear()
    if message:
        flash(message, "info")
    return redirect(url_for("index"))
