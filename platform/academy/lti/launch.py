"""The endpoints a platform calls to launch the tool: the login initiation (OIDC), the launch (a resource link signs
the LMS user in to their own account here and opens what it names; a deep-linking request shows the picker), and
the tool's public keys (/lti/jwks)."""
from __future__ import annotations

import logging

from flask import g, redirect, render_template, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import delete

from academy.data import progress
from academy.data.accounts import gettext
from academy.data.db import get_session
from academy.data.models import LtiPlatform, LtiValue, utcnow
from academy.logline import printable
from academy.lti import pylti
from academy.lti.blueprint import bp, current_course, refused, remember_frame
from academy.lti.claims import AGS, CUSTOM, DEEP_LINKING_ROLES, DEPLOYMENT, MAX_CLAIM, RESOURCE_LINK, ROLES, TARGET
from academy.lti.identities import account_for
from academy.lti.keys import public_jwk
from academy.lti.outbound import OutboundError, Policy
from academy.lti.registration import active_platforms, find_platform, public_base
from academy.lti.scores import remember_grade_link
from academy.web.limits import limit, limiter
from academy.web.security import start_session

log = logging.getLogger(__name__)


@bp.route("/login", methods=["GET", "POST"])
@limiter.limit(limit("limit_lti_logins_per_address"),
               error_message=lambda: gettext("Too many LMS launches from your network; try again later."))
def login() -> ResponseReturnValue:
    """Third-party initiated login: the platform names itself (iss, client_id) and the user (login_hint); an
    unregistered platform is refused here, before any browser is sent anywhere, and so is a registration whose
    authorization URL is not one browsers may be sent to (https, a public host: academy/lti/outbound.py)."""
    from pylti1p3.contrib.flask import FlaskOIDCLogin
    from pylti1p3.exception import OIDCException

    lti_request, tool_conf, session_service, cookies = pylti.services()
    launch_url = public_base() + url_for("lti.launch")  # the redirect URI registered with the platform
    db = get_session()
    db.execute(delete(LtiValue).where(LtiValue.expires_at <= utcnow()))  # logins never launched, launches done
    db.commit()
    issuer, client_id = lti_request.get_param("iss"), lti_request.get_param("client_id")
    platform = find_platform(issuer, client_id or None) if issuer else None
    if platform is not None:
        policy = Policy.from_settings()
        try:
            policy.check_host(policy.check_url(platform.auth_login_url))
        except OutboundError as exc:
            log.warning("LTI login refused: the authorization URL of registration %s is not allowed: %s",
                        platform.id, printable(exc.detail))
            return refused(gettext("This LMS's registration names an authorization URL this site does not send "
                                    "browsers to. An instructor corrects it on /lti/platforms."), 403)
        g.lti_platform = platform
    storage = pylti.launch_data_storage()
    oidc = FlaskOIDCLogin(lti_request, tool_conf, session_service=session_service, cookie_service=cookies,
                          launch_data_storage=storage)
    try:
        answer = oidc.redirect(launch_url)
    except OIDCException as exc:
        log.warning("LTI login refused (issuer %s, client %s): %s", printable(issuer or "?", 200),
                    printable(client_id, 200), printable(exc))
        if "registration" in str(exc):
            return refused(gettext("No LMS with the issuer %(issuer)s and this client id is registered here. An "
                                    "instructor registers it on /lti/platforms.",
                                    issuer=printable(issuer or "?", 200)), 403)
        return refused(gettext("The LMS's login request is incomplete (it lacks the issuer, the user hint or the "
                                "target link)."), 400)
    if platform is not None:
        remember_frame(storage, platform)
    return answer


@bp.post("/launch")
def launch() -> ResponseReturnValue:
    from pylti1p3.exception import LtiException

    try:
        message_launch = pylti.message_launch()  # refused without this browser's LTI session cookie
        data = message_launch.get_launch_data()  # validates everything, once
    except pylti.LaunchRefused as exc:
        log.warning("LTI launch refused: %s", printable(exc.detail))
        return refused(exc.message, exc.status)
    except LtiException as exc:
        log.warning("LTI launch refused: %s", printable(exc))
        return refused(_launch_reason(str(exc)), 403 if "Registration" in str(exc) or "deployment" in str(exc)
                        else 400)
    platform = find_platform(data["iss"], message_launch.get_client_id())
    if platform is None:  # deleted between the check and now
        return refused(gettext("This LMS is no longer registered here."), 403)
    g.lti_platform = platform
    too_long = [claim for claim, value in (("sub", data.get("sub")), ("deployment_id", data.get(DEPLOYMENT)),
                                           ("resource_link", (data.get(RESOURCE_LINK) or {}).get("id", "")))
                if not isinstance(value, (str, int)) or len(str(value)) > MAX_CLAIM
                or (claim == "sub" and not str(value))]
    if too_long:
        log.warning("LTI launch refused: %s missing or longer than %d characters", ", ".join(too_long), MAX_CLAIM)
        return refused(gettext("The LMS's launch names a user, deployment or link id that is missing or longer than "
                                "%(num)d characters.", num=MAX_CLAIM), 400)
    if message_launch.is_deep_link_launch():
        roles = data.get(ROLES)
        if not isinstance(roles, list) or not DEEP_LINKING_ROLES.intersection(r for r in roles if isinstance(r, str)):
            return refused(gettext("Only the course's instructors can choose what the LMS links to."), 403)
        return render_template("lti/pick.html", launch_id=message_launch.get_launch_id(), course=current_course(),
                               platform=platform)
    if not message_launch.is_resource_launch():
        return refused(gettext("This kind of LTI message is not supported here."), 400)
    user, identity = account_for(platform, data)
    target = str((data.get(CUSTOM) or {}).get(TARGET, ""))
    exercise_id = target.removeprefix("exercise:") if target.startswith("exercise:") else None
    if exercise_id and exercise_id in current_course().exercises and data.get(AGS):
        remember_grade_link(identity, exercise_id, data)
    get_session().commit()
    start_session(user, adopt_visits=False)  # a fresh session: whoever this browser was before, it is this LMS user now
    url, step = _target(target)
    if step is not None:
        # The step page that follows this cross-site POST records no visit (security.py: visits only from the site
        # itself); the launch is verified, so opening the step is this learner's own navigation.
        progress.record_visit(user, *step)
    return redirect(url, 303)


def _launch_reason(error: str) -> str:
    """A fixed reason for PyLTI1p3's refusal (its text, which may quote the launch, goes to the log only)."""
    if "Nonce" in error or "State not found" in error or "Missing state" in error or "cookie" in error:
        return gettext("This launch was already used, is too old, or did not start in this browser. Open the "
                       "link in the LMS again.")
    if "Registration" in error or "Client id" in error:
        return gettext("No LMS with this issuer and client id is registered here.")
    if "deployment" in error:
        return gettext("This deployment of the LMS is not registered here: an instructor adds its deployment id "
                       "on /lti/platforms.")
    if "expired" in error.lower() or "iat" in error:
        return gettext("This launch is too old. Open the link in the LMS again.")
    if "decode" in error or "public key" in error or "signature" in error.lower() or "JWT" in error:
        return gettext("The launch's signature does not match the LMS's keys.")
    return gettext("The LMS's launch is not a valid LTI 1.3 launch.")


def _target(target: str) -> tuple[str, tuple[str, str] | None]:
    """Where a launch leads: an exercise's step (and its lesson and step ids), a lesson, else the course (never
    anywhere off this site)."""
    course = current_course()
    kind, _, item = target.partition(":")
    for lesson in course.lessons:
        if kind == "lesson" and lesson.id == item:
            return url_for("lessons.resume", lesson_id=lesson.id), None
        for step in lesson.steps:
            exercise = getattr(step, "exercise", None)
            if kind == "exercise" and exercise is not None and exercise.id == item:
                return url_for("lessons.step", lesson_id=lesson.id, step_id=step.id), (lesson.id, step.id)
    return url_for("index"), None


@bp.get("/jwks")
def jwks() -> ResponseReturnValue:
    platforms = get_session().scalars(active_platforms().order_by(LtiPlatform.id)).all()
    keys = [public_jwk(p.tool_private_key) for p in platforms]
    return {"keys": keys}, 200, {"Cache-Control": "max-age=300"}
