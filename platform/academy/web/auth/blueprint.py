"""The accounts' blueprint and what its pages share: where a page goes back to (`back_here`), the password check
(`check_password`, as slow for an unknown account as for a known one), the notice of a mailed link."""
from __future__ import annotations

import functools

from flask import (
    Blueprint,
    flash,
    has_request_context,
    request,
    url_for,
)
from flask_babel import gettext
from werkzeug.security import check_password_hash, generate_password_hash

from academy.data.models import User
from academy.redirects import safe_next
from academy.settings import settings
from academy.web import mail

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
