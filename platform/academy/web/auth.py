"""Accounts: sign up, sign in (password hashed with werkzeug's scrypt KDF), guests, API tokens."""
from __future__ import annotations

import functools
import hmac

from flask import (
    Blueprint,
    abort,
    flash,
    g,
    has_request_context,
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
from werkzeug.security import check_password_hash, generate_password_hash

from academy.data import progress
from academy.data.accounts import (
    MIN_PASSWORD,
    AccountError,
    AddressUnconfirmed,
    clean_name,
    create_account,
    password_hash,
    revoke_tokens,
)
from academy.data.db import get_session
from academy.data.models import ApiToken, User, new_session_secret
from academy.settings import settings
from academy.web import backoff, confirmation, mail
from academy.web.inputs import safe_next
from academy.web.limits import limit, limiter, spend, spend_new_guest, too_many
from academy.web.security import (
    SIGNED_IN,
    end_other_sessions,
    login_required,
    new_api_token,
    no_store,
    start_session,
)

bp = Blueprint("auth", __name__, url_prefix="/auth")

def _safe_next(default: str) -> str:
    return safe_next(request.values.get("next"), default)


# Pages a learner passes through on the way back to where they were: their links and forms carry on the
# destination they were given (`next`) instead of naming themselves.
_PASSING = {"auth.signin", "auth.signup", "auth.signout_page", "auth.account_links", "auth.merge", "auth.guest",
            "auth.confirm_email"}


def back_here() -> str | None:
    """Where the header's Sign in, Sign up and Sign out links (and the forms they open) bring the learner back
    to: this page, with its language prefix and query (the lesson step they were on), or on the sign-in pages
    the destination they were given; None on the course page, where everyone lands anyway, and where no page
    of this site is named (a POST's answer, an unknown URL, a `next` off the site)."""
    if request.endpoint in _PASSING:
        target = _safe_next("")
    elif request.method == "GET" and request.endpoint is not None:
        path = request.full_path.rstrip("?") if request.query_string else request.path
        target = safe_next(request.script_root + path, "")
    else:
        target = ""
    return target if target and target != url_for("index") else None


@bp.app_context_processor
def _back_here() -> dict[str, str | None]:
    return {"back_here": back_here()} if has_request_context() else {}


@functools.cache
def _dummy_hash(method: str) -> str:
    """A hash of the same kind as real ones: an unknown email costs the same scrypt work as a known one."""
    return generate_password_hash("no account has this password", method=method)


def check_password(user: User | None, password: str) -> bool:
    """Whether `password` is `user`'s, in the same time whether or not the account exists."""
    if user is None or not user.password_hash:
        check_password_hash(_dummy_hash(settings().password_hash), password)
        return False
    return check_password_hash(user.password_hash, password)


_POST = ["POST"]


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


def _flash_mail(sent: mail.Sent | None, email: str | None) -> None:
    """Say what became of a confirmation link for an account's address, exactly."""
    if sent is None:
        flash(gettext("No new link was sent: %(email)s got several today. Open the newest one, or ask again "
                      "tomorrow.", email=email), "error")
    elif sent is mail.Sent.SENT:
        flash(gettext("We sent a link to %(email)s: open it to confirm that the address is yours.", email=email),
              "info")
    elif sent is mail.Sent.LOGGED:
        flash(gettext("This site sends no mail: the link that confirms %(email)s was written to the server's log. "
                      "Ask the site's operator for it.", email=email), "info")
    else:
        flash(gettext("The mail to %(email)s could not be sent. Ask for a new link on your account page later.",
                      email=email), "error")


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


def _token_count(user: User) -> int:
    return get_session().scalar(select(func.count()).select_from(ApiToken).where(ApiToken.user_id == user.id)) or 0


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
