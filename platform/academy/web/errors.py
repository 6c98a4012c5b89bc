"""Error pages for people and JSON errors for the API: never a platform stack trace."""
from __future__ import annotations

import logging

from flask import Flask, jsonify, make_response, render_template, request
from flask.typing import ResponseReturnValue
from flask_babel import gettext, lazy_gettext
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from academy.data.db import INIT_DB, get_session
from academy.i18n import N_
from academy.settings import InstanceNotReady
from academy.web import limits
from academy.web.inputs import MAX_BODY_BYTES

log = logging.getLogger("academy.errors")  # the name it has always logged under

# Error pages in the page's language. Werkzeug's names and default descriptions are the msgids, so English
# pages read as before; a view's own description (abort(..., description=...)) is translated where the view
# raises it. The JSON API's errors follow its request's Accept-Language, else English (i18n.current_language).
NAMES = {400: lazy_gettext("Bad Request"), 401: lazy_gettext("Unauthorized"), 403: lazy_gettext("Forbidden"),
         404: lazy_gettext("Not Found"), 405: lazy_gettext("Method Not Allowed"),
         413: lazy_gettext("Request Entity Too Large"), 429: lazy_gettext("Too Many Requests"),
         500: lazy_gettext("Internal Server Error")}
DESCRIPTIONS = [
    lazy_gettext("The browser (or proxy) sent a request that this server could not understand."),
    lazy_gettext("The server could not verify that you are authorized to access the URL requested. You either "
                 "supplied the wrong credentials (e.g. a bad password), or your browser doesn't understand how to "
                 "supply the credentials required."),
    lazy_gettext("You don't have the permission to access the requested resource. It is either read-protected or "
                 "not readable by the server."),
    lazy_gettext("The requested URL was not found on the server. If you entered the URL manually please check your "
                 "spelling and try again."),
    lazy_gettext("The method is not allowed for the requested URL."),
    lazy_gettext("This user has exceeded an allotted request count. Try again later."),
    lazy_gettext("The server encountered an internal error and was unable to complete your request. Either the "
                 "server is overloaded or there is an error in the application."),
]
_DEFAULTS = {message._args[0]: message for message in DESCRIPTIONS}
TOO_LARGE = N_("The request is larger than %(size)s KB; code may be at most 256 KB.")


def _message(exc: HTTPException) -> str:
    """The error's description in the request's language (Werkzeug's defaults through the catalogs)."""
    if isinstance(exc, RequestEntityTooLarge) and exc.description == RequestEntityTooLarge.description:
        return gettext(TOO_LARGE, size=MAX_BODY_BYTES // 1024)  # the body itself: a view's 413 says its own
    return _DEFAULTS.get(str(exc.description), exc.description or NAMES.get(exc.code or 500, exc.name))


def _handle(exc: HTTPException) -> ResponseReturnValue:
    if (exc.code or 500) >= 500:
        _roll_back()  # the page reads g.user: a session whose flush failed would fail it again (a bare 500)
    # A 429 says when to come back, in Retry-After and, for the API, as `retry_after` (seconds) in its body.
    wait = (limits.retry_after(exc) or limits.UNKNOWN_WAIT_S) if exc.code == 429 else None
    if request.blueprint == "api" or request.path.startswith("/api/"):
        response = jsonify(error=str(_message(exc)), **({"retry_after": wait} if wait else {}))
    else:
        response = make_response(render_template("error.html", code=exc.code, name=NAMES.get(exc.code or 500, exc.name),
                                                 message=_message(exc), retry_after=wait))
    response.status_code = exc.code or 500
    if exc.get_response().headers.get("Allow"):  # what is allowed (405)
        response.headers["Allow"] = exc.get_response().headers["Allow"]
    return limits.too_many(response, wait) if wait else response


def _roll_back() -> None:
    try:
        get_session().rollback()
    except Exception:  # noqa: BLE001 - the error page must be drawn whatever state the database is in
        log.exception("rolling back before the error page failed")


def _not_ready(exc: InstanceNotReady) -> ResponseReturnValue:
    """The instance needs `init-db` (academy/instance.py): the operator reads why in the log; the page says
    only what to do, in English like the command it names, without the database's address."""
    log.error("%s", exc)
    message = f"This site is not ready for this version of the app: its administrator must run `{INIT_DB}`."
    if request.path.startswith("/api/"):
        response = jsonify(error=message)
    else:
        response = make_response(message)
        response.mimetype = "text/plain"
    response.status_code, response.headers["Retry-After"] = 503, "60"
    return response


def init_app(app: Flask) -> None:
    app.register_error_handler(HTTPException, _handle)
    app.register_error_handler(InstanceNotReady, _not_ready)
