"""The LTI blueprint (/lti), and what its pages share: who may frame them (the LMS the browser's LTI session came
from, and only on the few pages an LMS frames), the refusal page, the course they link to. Its routes are in
launch.py, deep_linking.py and platform_pages.py (academy/lti/__init__.py imports them)."""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, g, render_template, request
from flask.typing import ResponseReturnValue

from academy.data.db import get_session
from academy.data.models import LtiPlatform
from academy.lti import pylti
from academy.lti.claims import LAUNCH_LIFETIME_S, SESSION_ID
from academy.lti.registration import active_platforms
from academy.web.security import CONTENT_SECURITY_POLICY

bp = Blueprint("lti", __name__, url_prefix="/lti")

# The pages an LMS may show in a frame (Canvas and Moodle open the deep-linking picker in one): the login's
# redirect, the launch's answer (the picker, or a refusal) and the picker's answer. Every other page of the site
# stays unframeable; a resource link's lesson opens in a new window (its session cookie is SameSite=Lax).
FRAMEABLE = frozenset({"lti.login", "lti.launch", "lti.deep_link"})
_HOST = re.compile(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?")


def platform_origins(platform: LtiPlatform) -> list[str]:
    """The web origins of one registered LMS (its issuer and endpoints), as CSP sources."""
    origins: set[str] = set()
    for url in (platform.issuer, platform.auth_login_url, platform.auth_token_url):
        parts = urlsplit(url)
        if parts.scheme in ("https", "http") and _HOST.fullmatch(parts.netloc or ""):
            origins.add(f"{parts.scheme}://{parts.netloc}")
    return sorted(origins)


def remember_frame(storage: Any, platform: LtiPlatform) -> None:
    """The browser's LTI session (its session id, in `storage`) came from `platform`: its pages may be framed by
    that LMS only."""
    if storage.get_session_id():
        storage.set_value("frame", platform.id, LAUNCH_LIFETIME_S)


def _framing_platform() -> LtiPlatform | None:
    """The registration this request's LTI pages may be framed by: the one the handler named (g.lti_platform),
    else the one the browser's LTI session came from (its login)."""
    platform = g.get("lti_platform")
    if platform is not None:
        return platform
    session_id = request.cookies.get("lti1p3-session-id", "")
    if not SESSION_ID.fullmatch(session_id):
        return None
    storage = pylti.launch_data_storage()
    storage.set_session_id(session_id)
    platform_id = storage.get_value("frame")
    if not isinstance(platform_id, int):
        return None
    return get_session().scalar(active_platforms().where(LtiPlatform.id == platform_id))


@bp.after_request
def _framed_by_the_sessions_platform(response: Any) -> Any:
    if request.endpoint in FRAMEABLE:
        platform = _framing_platform()
        ancestors = " ".join(platform_origins(platform)) if platform is not None else ""
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY.replace(
            "frame-ancestors 'none'", f"frame-ancestors {ancestors or chr(39) + 'none' + chr(39)}")
    return response


def refused(message: str, status: int) -> ResponseReturnValue:
    return render_template("lti/refused.html", message=message), status


def current_course() -> Any:
    from academy.content import get_content

    return get_content().course
