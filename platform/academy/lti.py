"""LTI 1.3: this site as a tool inside an LMS (Canvas, Moodle, Blackboard, Brightspace), through PyLTI1p3.

    GET|POST /lti/login      the platform's third-party initiated login (OIDC): checks the registration, sets
                             the state cookie and the browser's LTI session, sends the browser to the platform
    POST /lti/launch         the launch (id_token + state): a resource link signs the LMS user in to their own
                             account here and opens the lesson or exercise it names; a deep-linking request
                             shows the picker
    POST /lti/deep-link      the instructor's pick: a signed deep-linking response, posted back to the platform
    GET  /lti/jwks           the tool's public keys (one per registration), what platforms verify it with
    /lti/platforms           registrations (instructors; `flask --app academy lti-register` for operators): add,
                             add a deployment, edit in place (/edit), remove once confirmed (/remove)

Everything a launch claims is believed only after PyLTI1p3 has checked it: the state against the cookie the
login set, the nonce (kept in the database under the browser's LTI session id, and deleted when a launch
uses it: no launch can be replayed), the registration (issuer + client id) and deployment, the signature
against the platform's published keys (fetched through academy/outbound.py: https, public addresses only, no
redirects, bounded; kept per URL), the message's shape; and here the claims LTI 1.3 requires (`exp`, `iat`, `azp`
when `aud` is a list) and the lengths of what is stored. An LMS user is an account keyed by the
registration, the deployment and the platform's `sub` (`LtiIdentity`), never by an email or a name the LMS
sends, and is always a learner here: an LMS instructor gets no instructor rights on this site. A removed
registration keeps its row (`removed_at`), so registering its issuer and client id again finds the same accounts.
Nothing an LMS answered (a body, an exception naming a URL) reaches a page or a stored error: each says a fixed
reason, and the detail goes to the log, escaped (`outbound.printable`). After each
graded submission the exercise's best score goes to the line item of every resource link the learner
launched it from (Assignment and Grade Services, `send_best_score`).

PyLTI1p3, requests and cryptography are imported by the functions that need them, not with this module:
administrators' commands never pay for them (docs/web.md, "What starting costs").
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

from academy import progress
from academy.accounts import AccountError, clean_name, clean_sis_id, gettext
from academy.db import get_session
from academy.limits import limit, limiter
from academy.logline import printable
from academy.models import (
    GRADED,
    JobStatus,
    LtiDeployment,
    LtiGradeLink,
    LtiIdentity,
    LtiPlatform,
    LtiValue,
    Submission,
    User,
    utcnow,
)
from academy.outbound import OutboundError, Policy, fetch_key_set, key_sets
from academy.security import CONTENT_SECURITY_POLICY, instructor_required, start_session
from academy.settings import settings

if TYPE_CHECKING:
    from pylti1p3.registration import Registration

log = logging.getLogger(__name__)

bp = Blueprint("lti", __name__, url_prefix="/lti")

CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
RESOURCE_LINK = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"
TARGET = "dla_target"  # the custom parameter a deep link sets: "exercise:<id>" or "lesson:<id>"
LAUNCH_LIFETIME_S = 3600  # a deep-linking launch waits this long for the instructor's pick
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
ROLES = "https://purl.imsglobal.org/spec/lti/claim/roles"
MESSAGE_TYPE = "https://purl.imsglobal.org/spec/lti/claim/message_type"
# The context (course membership) roles that may choose what the LMS links to: the course's instructors, content
# developers and administrators. Institution roles (.../institution/person#Instructor, #Faculty, #Staff) say
# nothing about this course: a learner of it may hold one.
DEEP_LINKING_ROLES = frozenset(f"http://purl.imsglobal.org/vocab/lis/v2/membership#{role}"
                               for role in ("Instructor", "ContentDeveloper", "Administrator"))
MAX_CLAIM = 255  # the longest `sub`, resource link id ... a launch may carry (the columns they are kept in)
SESSION_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")  # PyLTI1p3's uuid4


class LtiRefused(Exception):
    """A login or launch this site refuses: `message` says why, plainly; `status` is the answer's code."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message, self.status = message, status


# -- registrations --------------------------------------------------------------------------------------

def new_key_pair() -> tuple[str, str]:
    """A fresh RSA key for one registration: (private PEM, its kid as /lti/jwks publishes it)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return private, public_jwk(private)["kid"]


def public_pem(private_pem: str) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def public_jwk(private_pem: str) -> dict[str, Any]:
    """The public half as a JWK, with the kid PyLTI1p3 signs with (its thumbprint), alg RS256, use sig."""
    from pylti1p3.registration import Registration

    return dict(Registration.get_jwk(public_pem(private_pem)))


def _url(value: str, what: str) -> str:
    """A URL this site will connect to or send browsers to: https (http only with DLA_LTI_ALLOW_HTTP), a host,
    and that host not on a loopback, private, link-local or reserved network (DLA_LTI_PRIVATE_NETWORKS)."""
    policy = Policy.from_settings()
    try:
        value = policy.check_url(value)
    except OutboundError:
        raise AccountError(gettext("%(what)s must be an https:// URL with a host name.", what=what)) from None
    try:
        policy.check_host(value)
    except OutboundError:
        raise AccountError(gettext("%(what)s names a host on a loopback, private, link-local or reserved network, "
                                   "which this site does not connect to (an operator may allow a private network "
                                   "with DLA_LTI_PRIVATE_NETWORKS).", what=what)) from None
    return value


def _issuer(value: str) -> str:
    """The platform's issuer as the spec has it: an https URL with a host and no query or fragment (http only with
    DLA_LTI_ALLOW_HTTP), without spaces or control characters. It is never fetched."""
    value = value.strip()
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - a port that is not a number raises
    except ValueError:
        parts = None
    schemes = ("https", "http") if settings().lti_allow_http else ("https",)
    if (parts is None or parts.scheme not in schemes or not parts.hostname or parts.query or parts.fragment
            or parts.username is not None or len(value) > 255
            or any(ord(ch) <= 32 or ord(ch) == 127 or 0x80 <= ord(ch) < 0xA0 for ch in value)):
        raise AccountError(gettext("The issuer must be the LMS's https:// URL with a host name, as the LMS shows it "
                                   "(e.g. https://canvas.instructure.com), without spaces."))
    return value


def _field(value: str, what: str, limit: int = 255) -> str:
    value = value.strip()
    if not value or len(value) > limit or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise AccountError(gettext("%(what)s is missing, longer than %(num)d characters or not plain text.",
                                   what=what, num=limit))
    return value


@dataclass(frozen=True)
class PlatformForm:
    """What registering a platform takes; `clean()` checks every field (AccountError says which is wrong)."""
    name: str
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    deployment_ids: tuple[str, ...] = ()
    auth_audience: str = ""

    def clean(self) -> PlatformForm:
        return PlatformForm(
            name=_field(self.name, gettext("The name"), 100), issuer=_issuer(self.issuer),
            client_id=_field(self.client_id, gettext("The client id")),
            auth_login_url=_url(self.auth_login_url, gettext("The authorization (OIDC auth) URL")),
            auth_token_url=_url(self.auth_token_url, gettext("The access token URL")),
            key_set_url=_url(self.key_set_url, gettext("The platform's public key set (JWKS) URL")),
            deployment_ids=tuple(dict.fromkeys(_field(d, gettext("A deployment id")) for d in self.deployment_ids
                                               if d.strip())),
            auth_audience=_url(self.auth_audience, gettext("The token audience")) if self.auth_audience.strip()
            else "")


def is_removed(platform: LtiPlatform) -> bool:
    return platform.removed_at is not None


def register_platform(form: PlatformForm) -> LtiPlatform:
    """A new registration with its own key pair (caller commits). AccountError for a field that is wrong or
    an issuer and client id registered already. The issuer and client id of a removed registration bring it back
    (new URLs, deployments and key): its learners' launches find their accounts again."""
    form = form.clean()
    db = get_session()
    platform = db.scalar(select(LtiPlatform).where(LtiPlatform.issuer == form.issuer,
                                                   LtiPlatform.client_id == form.client_id))
    if platform is not None and not is_removed(platform):
        raise AccountError(gettext("The issuer %(issuer)s already has a registration with client id %(client)s.",
                                   issuer=form.issuer, client=form.client_id))
    private, kid = new_key_pair()
    if platform is None:
        platform = LtiPlatform(issuer=form.issuer, client_id=form.client_id)
        db.add(platform)
    platform.name, platform.tool_private_key, platform.tool_kid = form.name, private, kid
    _update_urls(platform, form)
    platform.deployments = [LtiDeployment(deployment_id=d) for d in form.deployment_ids]
    platform.removed_at = None
    try:
        db.flush()
    except IntegrityError:  # the same registration made a moment ago (a double click): the pair is taken
        db.rollback()
        raise AccountError(gettext("The issuer %(issuer)s already has a registration with client id %(client)s.",
                                   issuer=form.issuer, client=form.client_id)) from None
    return platform


def _update_urls(platform: LtiPlatform, form: PlatformForm) -> None:
    platform.auth_login_url, platform.auth_token_url = form.auth_login_url, form.auth_token_url
    platform.key_set_url, platform.auth_audience = form.key_set_url, form.auth_audience or None


def edit_platform(platform: LtiPlatform, form: PlatformForm) -> None:
    """Change a registration's name, URLs and token audience in place (its issuer, client id, key and learners stay),
    each checked as at registration (AccountError). The caller commits."""
    form = PlatformForm(name=form.name, issuer=platform.issuer, client_id=platform.client_id,
                        auth_login_url=form.auth_login_url, auth_token_url=form.auth_token_url,
                        key_set_url=form.key_set_url, auth_audience=form.auth_audience).clean()
    platform.name = form.name
    _update_urls(platform, form)


def remove_platform(platform: LtiPlatform) -> None:
    """Refuse the registration's launches from now on (it leaves /lti/jwks and the list); its learners keep their
    accounts, and registering the same issuer and client id again leads their launches back to them. The caller
    commits."""
    platform.deployments = []
    platform.removed_at = utcnow()


def add_deployment(platform: LtiPlatform, deployment_id: str) -> None:
    deployment_id = _field(deployment_id, gettext("A deployment id"))
    if any(d.deployment_id == deployment_id for d in platform.deployments):
        raise AccountError(gettext("%(platform)s already has the deployment %(id)s.", platform=platform.name,
                                   id=deployment_id))
    platform.deployments.append(LtiDeployment(deployment_id=deployment_id))


def tool_urls(base: str) -> dict[str, str]:
    """What an LMS asks of the tool when it is registered, under this site's public origin `base`."""
    return {"login": f"{base}/lti/login", "launch": f"{base}/lti/launch", "deep_link": f"{base}/lti/launch",
            "jwks": f"{base}/lti/jwks"}


def public_base() -> str:
    """The site's public origin for the URLs an LMS is given: DLA_PUBLIC_URL, else this request's own."""
    return settings().public_url or request.host_url.rstrip("/")


# -- PyLTI1p3's seams: where registrations, nonces and launches live ----------------------------------------

def _http() -> Any:
    """The requests session PyLTI1p3 is given: only where academy/outbound.py allows, no redirects, bounded."""
    from pylti1p3.service_connector import REQUESTS_USER_AGENT

    from academy import outbound

    return outbound.session(Policy.from_settings(), REQUESTS_USER_AGENT)


# What pages and stored errors say when the LMS cannot be reached or answers wrongly: one fixed reason each,
# never the upstream text (it may be anything the URL answered, an internal service's included), and the same
# whether the port was closed, filtered or answered.
KEY_SET_UNAVAILABLE = "the LMS's key set could not be fetched"
SCORE_NOT_TAKEN = "the LMS could not be reached, or did not take the score"


def _registration(platform: LtiPlatform) -> Registration:
    from pylti1p3.registration import Registration

    registration = (Registration().set_issuer(platform.issuer).set_client_id(platform.client_id)
                    .set_auth_login_url(platform.auth_login_url).set_auth_token_url(platform.auth_token_url)
                    .set_key_set_url(platform.key_set_url).set_tool_private_key(platform.tool_private_key)
                    .set_tool_public_key(public_pem(platform.tool_private_key)))
    if platform.auth_audience:
        registration.set_auth_audience(platform.auth_audience)
    return registration


def active_platforms() -> Any:
    """select(LtiPlatform) of the registrations not removed."""
    return select(LtiPlatform).where(LtiPlatform.removed_at.is_(None))


def find_platform(issuer: str, client_id: str | None) -> LtiPlatform | None:
    """The registration of (issuer, client id); without a client id (the login initiation may leave it out),
    the issuer's only registration, if it has exactly one. A removed registration is none."""
    db = get_session()
    if not isinstance(issuer, str) or (client_id is not None and not isinstance(client_id, str)):
        return None
    if client_id:
        return db.scalar(active_platforms().where(LtiPlatform.issuer == issuer, LtiPlatform.client_id == client_id))
    rows = db.scalars(active_platforms().where(LtiPlatform.issuer == issuer).limit(2)).all()
    return rows[0] if len(rows) == 1 else None


def _tool_conf() -> Any:
    from pylti1p3.deployment import Deployment
    from pylti1p3.tool_config import ToolConfAbstract

    class DatabaseToolConf(ToolConfAbstract):
        """The registrations in the database; an issuer may have several client ids (always looked up by both)."""

        def check_iss_has_one_client(self, iss: str) -> bool:
            return False

        def check_iss_has_many_clients(self, iss: str) -> bool:
            return True

        def find_registration_by_issuer(self, iss: str, *args: Any, **kwargs: Any) -> Any:
            return None  # never asked: check_iss_has_one_client is False

        def find_registration_by_params(self, iss: str, client_id: str, *args: Any, **kwargs: Any) -> Any:
            platform = find_platform(iss, client_id)
            return _registration(platform) if platform is not None else None

        def find_deployment(self, iss: str, deployment_id: str) -> Any:
            return None

        def find_deployment_by_params(self, iss: str, deployment_id: str, client_id: str, *args: Any,
                                      **kwargs: Any) -> Any:
            platform = find_platform(iss, client_id)
            if platform is None or deployment_id not in {d.deployment_id for d in platform.deployments}:
                return None
            return Deployment().set_deployment_id(deployment_id)

    return DatabaseToolConf()


def _storage() -> Any:
    from pylti1p3.launch_data_storage.base import LaunchDataStorage

    class DatabaseStorage(LaunchDataStorage):
        """Nonces and launches in `lti_values`, under the browser's LTI session id (the `lti1p3-session-id`
        cookie the login sets): a nonce is good only in the browser that logged in, and only once."""
        _session_cookie_name = "session-id"

        def can_set_keys_expiration(self) -> bool:
            return True

        def get_value(self, key: str) -> Any:
            row = get_session().get(LtiValue, self._prepare_key(key))
            return json.loads(row.value) if row is not None and row.expires_at > utcnow() else None

        def set_value(self, key: str, value: Any, exp: int | None = None) -> None:
            db = get_session()
            db.merge(LtiValue(key=self._prepare_key(key), value=json.dumps(value),
                              expires_at=utcnow() + timedelta(seconds=exp or LAUNCH_LIFETIME_S)))
            db.commit()

        def check_value(self, key: str) -> bool:
            return self.get_value(key) is not None

        def take(self, key: str) -> bool:
            """Delete the key's value if it is there and alive; True only for the one caller that did."""
            db = get_session()
            taken = db.execute(delete(LtiValue).where(LtiValue.key == self._prepare_key(key),
                                                      LtiValue.expires_at > utcnow())).rowcount
            db.commit()
            return taken == 1

    return DatabaseStorage()


def _services() -> tuple[Any, Any, Any, Any]:
    """(request, tool conf, session service, cookie service) for this Flask request."""
    from pylti1p3.contrib.flask import FlaskCookieService, FlaskRequest
    from pylti1p3.session import SessionService

    class CheckedCookieService(FlaskCookieService):
        """An LTI session id that is not one PyLTI1p3 makes (a uuid4) is no session id: the login makes a new one,
        a launch is refused (400), and no over-long key ever reaches the database."""

        def get_cookie(self, name: str) -> Any:
            value = super().get_cookie(name)
            if name == "session-id" and value is not None and not SESSION_ID.fullmatch(value):
                return None
            return value

    class OneTimeSessionService(SessionService):
        """PyLTI1p3's, with a nonce that a launch uses up (the library only checks that it exists, so the same
        id_token could be posted again), and no second validation of a state by the token's hash."""
        _launch_data_lifetime = LAUNCH_LIFETIME_S

        def check_nonce(self, nonce: str) -> bool:
            return self.data_storage.take(self._get_key("nonce", nonce))

        def set_state_valid(self, state: str, id_token_hash: str) -> None:
            return None

        def check_state_is_valid(self, state: str, id_token_hash: str) -> bool:
            return False

    lti_request = FlaskRequest(request_is_secure=request.is_secure)
    session_service = OneTimeSessionService(lti_request)
    return lti_request, _tool_conf(), session_service, CheckedCookieService(lti_request)


class LaunchRefused(Exception):
    """A launch refused by this module's own checks: `message` is the fixed reason the page shows."""

    def __init__(self, message: str, detail: str, status: int = 400):
        super().__init__(detail)
        self.message, self.detail, self.status = message, detail, status


def _launch_class() -> Any:
    from pylti1p3.contrib.flask import FlaskMessageLaunch

    class MessageLaunch(FlaskMessageLaunch):
        """PyLTI1p3's launch, with the key set fetched through academy/outbound.py and kept (key_sets), and the
        claims LTI 1.3 (OpenID Connect) requires: `exp` and `iat`, and `azp` when `aud` is a list."""

        def get_client_id(self) -> str:
            body = self._get_jwt_body()
            aud, azp = body.get("aud"), body.get("azp")
            if isinstance(aud, list) and isinstance(azp, str) and azp in aud:
                return azp  # the party the token was issued to, whatever its place in the list
            return super().get_client_id()

        def get_public_key(self) -> tuple[str, str]:
            from jwcrypto.jwk import JWK

            header = self._jwt.get("header", {})
            kid, alg = header.get("kid"), header.get("alg")
            if not isinstance(kid, str) or not kid or not isinstance(alg, str) or not alg:
                raise LaunchRefused(gettext("The launch's signature does not match the LMS's keys."),
                                    "no kid or alg in the header")
            url = self._registration.get_key_set_url()
            policy = Policy.from_settings()
            try:
                key = key_sets.key(url, kid, lambda u: fetch_key_set(u, policy))
            except OutboundError as exc:
                log.warning("LTI key set of %s not fetched: %s", printable(self._registration.get_issuer(), 200),
                            printable(exc.detail))
                raise LaunchRefused(gettext("The LMS's key set could not be fetched, so its launch cannot be "
                                            "checked. If it keeps failing, tell the course's instructor."),
                                    "key set", 502) from None
            if key is None or key.get("alg", "RS256") != alg:
                raise LaunchRefused(gettext("The launch's signature does not match the LMS's keys."),
                                    "no key with this kid and alg")
            try:
                return JWK.from_json(json.dumps(key)).export_to_pem(), alg
            except Exception:  # noqa: BLE001 - whatever the key set holds
                raise LaunchRefused(gettext("The launch's signature does not match the LMS's keys."),
                                    "a key of the key set is not usable") from None

        def validate_jwt_signature(self) -> Any:
            super().validate_jwt_signature()
            body = self._get_jwt_body()
            for claim in ("exp", "iat"):
                if not isinstance(body.get(claim), (int, float)) or isinstance(body.get(claim), bool):
                    raise LaunchRefused(gettext("The LMS's launch lacks its issue or expiry time (iat, exp), which "
                                                "LTI 1.3 requires."), f"no {claim}")
            aud, azp = body.get("aud"), body.get("azp")
            client_id = self._registration.get_client_id()
            audience = aud if isinstance(aud, list) else [aud]
            if client_id not in audience or (azp is not None and azp != client_id) or (
                    isinstance(aud, list) and len(aud) > 1 and azp is None):
                raise LaunchRefused(gettext("The launch is not addressed to this tool (its aud and azp claims)."),
                                    "aud/azp")
            return self

    return MessageLaunch


def _message_launch(launch_id: str | None = None) -> Any:
    lti_request, tool_conf, session_service, cookies = _services()
    storage = _storage()
    message_launch = _launch_class()
    if launch_id is not None:
        return message_launch.from_cache(launch_id, lti_request, tool_conf, session_service=session_service,
                                         cookie_service=cookies, launch_data_storage=storage,
                                         requests_session=_http())
    launch = message_launch(lti_request, tool_conf, session_service=session_service, cookie_service=cookies,
                            requests_session=_http())
    launch.set_launch_data_storage(storage)
    return launch


# -- the endpoints a platform calls ---------------------------------------------------------------------------

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


def _remember_frame(storage: Any, platform: LtiPlatform) -> None:
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
    storage = _storage()
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


@bp.route("/login", methods=["GET", "POST"])
@limiter.limit(limit("limit_lti_logins_per_address"),
               error_message=lambda: gettext("Too many LMS launches from your network; try again later."))
def login() -> ResponseReturnValue:
    """Third-party initiated login: the platform names itself (iss, client_id) and the user (login_hint); an
    unregistered platform is refused here, before any browser is sent anywhere, and so is a registration whose
    authorization URL is not one browsers may be sent to (https, a public host: academy/outbound.py)."""
    from pylti1p3.contrib.flask import FlaskOIDCLogin
    from pylti1p3.exception import OIDCException

    lti_request, tool_conf, session_service, cookies = _services()
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
            return _refused(gettext("This LMS's registration names an authorization URL this site does not send "
                                    "browsers to. An instructor corrects it on /lti/platforms."), 403)
        g.lti_platform = platform
    storage = _storage()
    oidc = FlaskOIDCLogin(lti_request, tool_conf, session_service=session_service, cookie_service=cookies,
                          launch_data_storage=storage)
    try:
        answer = oidc.redirect(launch_url)
    except OIDCException as exc:
        log.warning("LTI login refused (issuer %s, client %s): %s", printable(issuer or "?", 200),
                    printable(client_id, 200), printable(exc))
        if "registration" in str(exc):
            return _refused(gettext("No LMS with the issuer %(issuer)s and this client id is registered here. An "
                                    "instructor registers it on /lti/platforms.",
                                    issuer=printable(issuer or "?", 200)), 403)
        return _refused(gettext("The LMS's login request is incomplete (it lacks the issuer, the user hint or the "
                                "target link)."), 400)
    if platform is not None:
        _remember_frame(storage, platform)
    return answer


@bp.post("/launch")
def launch() -> ResponseReturnValue:
    from pylti1p3.exception import LtiException

    try:
        message_launch = _message_launch()  # refused without this browser's LTI session cookie
        data = message_launch.get_launch_data()  # validates everything, once
    except LaunchRefused as exc:
        log.warning("LTI launch refused: %s", printable(exc.detail))
        return _refused(exc.message, exc.status)
    except LtiException as exc:
        log.warning("LTI launch refused: %s", printable(exc))
        return _refused(_launch_reason(str(exc)), 403 if "Registration" in str(exc) or "deployment" in str(exc)
                        else 400)
    platform = find_platform(data["iss"], message_launch.get_client_id())
    if platform is None:  # deleted between the check and now
        return _refused(gettext("This LMS is no longer registered here."), 403)
    g.lti_platform = platform
    too_long = [claim for claim, value in (("sub", data.get("sub")), ("deployment_id", data.get(DEPLOYMENT)),
                                           ("resource_link", (data.get(RESOURCE_LINK) or {}).get("id", "")))
                if not isinstance(value, (str, int)) or len(str(value)) > MAX_CLAIM
                or (claim == "sub" and not str(value))]
    if too_long:
        log.warning("LTI launch refused: %s missing or longer than %d characters", ", ".join(too_long), MAX_CLAIM)
        return _refused(gettext("The LMS's launch names a user, deployment or link id that is missing or longer than "
                                "%(num)d characters.", num=MAX_CLAIM), 400)
    if message_launch.is_deep_link_launch():
        roles = data.get(ROLES)
        if not isinstance(roles, list) or not DEEP_LINKING_ROLES.intersection(r for r in roles if isinstance(r, str)):
            return _refused(gettext("Only the course's instructors can choose what the LMS links to."), 403)
        return render_template("lti/pick.html", launch_id=message_launch.get_launch_id(), course=_course(),
                               platform=platform)
    if not message_launch.is_resource_launch():
        return _refused(gettext("This kind of LTI message is not supported here."), 400)
    user, identity = account_for(platform, data)
    target = str((data.get(CUSTOM) or {}).get(TARGET, ""))
    exercise_id = target.removeprefix("exercise:") if target.startswith("exercise:") else None
    if exercise_id and exercise_id in _course().exercises and data.get(AGS):
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


def _refused(message: str, status: int) -> ResponseReturnValue:
    return render_template("lti/refused.html", message=message), status


def _course() -> Any:
    from academy.content import get_content

    return get_content().course


def _target(target: str) -> tuple[str, tuple[str, str] | None]:
    """Where a launch leads: an exercise's step (and its lesson and step ids), a lesson, else the course (never
    anywhere off this site)."""
    course = _course()
    kind, _, item = target.partition(":")
    for lesson in course.lessons:
        if kind == "lesson" and lesson.id == item:
            return url_for("lessons.resume", lesson_id=lesson.id), None
        for step in lesson.steps:
            exercise = getattr(step, "exercise", None)
            if kind == "exercise" and exercise is not None and exercise.id == item:
                return url_for("lessons.step", lesson_id=lesson.id, step_id=step.id), (lesson.id, step.id)
    return url_for("index"), None


# -- accounts -------------------------------------------------------------------------------------------------

def account_for(platform: LtiPlatform, data: dict[str, Any]) -> tuple[User, LtiIdentity]:
    """The account of this LMS user: found by (registration, deployment, sub), made on their first launch.
    Nothing the LMS says about the user (email, name) finds an account; the name and SIS id fill in what the
    account does not have yet (an instructor's correction stays). The caller commits."""
    db = get_session()
    key = (platform.id, str(data[DEPLOYMENT]), str(data["sub"]))
    where = (LtiIdentity.platform_id == key[0]) & (LtiIdentity.deployment_id == key[1]) & (LtiIdentity.sub == key[2])
    identity = db.scalar(select(LtiIdentity).where(where))
    if identity is None:
        user = User(role="learner")
        identity = LtiIdentity(platform_id=key[0], deployment_id=key[1], sub=key[2], user=user)
        db.add(identity)
        try:
            db.commit()
        except IntegrityError:  # the same user's second launch at the same moment made it first
            db.rollback()
            identity = db.scalar(select(LtiIdentity).where(where))
    user = identity.user
    email = data.get("email")
    identity.email = email[:254] if isinstance(email, str) and email else None
    identity.last_launch_at = utcnow()
    if not user.name:
        user.name = _name_of(data)
    sourcedid = (data.get(LIS) or {}).get("person_sourcedid")
    if not user.sis_id and isinstance(sourcedid, str):
        try:
            user.sis_id = clean_sis_id(sourcedid, user=user)
        except AccountError:
            pass  # another account has it (or it is not plain text): leave it to an instructor
    return user, identity


def _name_of(data: dict[str, Any]) -> str | None:
    name = data.get("name") or " ".join(str(data.get(k) or "") for k in ("given_name", "family_name")).strip()
    try:
        return clean_name(str(name), required=False) if name else None
    except AccountError:
        return None


# -- grades ---------------------------------------------------------------------------------------------------

def remember_grade_link(identity: LtiIdentity, exercise_id: str, data: dict[str, Any]) -> None:
    """Where this exercise's score goes for this LMS user: the launch's Assignment and Grade Services claim."""
    db = get_session()
    resource_link = str((data.get(RESOURCE_LINK) or {}).get("id", ""))
    link = db.scalar(select(LtiGradeLink).where(LtiGradeLink.identity_id == identity.id,
                                                LtiGradeLink.resource_link_id == resource_link))
    if link is None:
        link = LtiGradeLink(identity_id=identity.id, user_id=identity.user_id, resource_link_id=resource_link,
                            exercise_id=exercise_id, ags_json="{}")
        db.add(link)
    claim = data[AGS]
    if link.exercise_id != exercise_id or json.loads(link.ags_json) != claim:
        link.sent_score = None  # a new line item (or a link re-pointed) has had nothing yet
    link.exercise_id, link.ags_json, link.updated_at = exercise_id, json.dumps(claim), utcnow()


def best_score(user_id: int, exercise_id: str) -> float | None:
    """The exercise's best score for this user, 0-100, as the gradebook has it; None when nothing was graded."""
    db = get_session()
    best = None
    for (result_json,) in db.execute(select(Submission.result_json).where(
            Submission.user_id == user_id, Submission.exercise_id == exercise_id, GRADED,
            Submission.status == JobStatus.DONE)):
        if result_json:
            score = round(100 * float(json.loads(result_json).get("score", 0.0)), 1)
            best = score if best is None else max(best, score)
    return best


def send_best_score(user_id: int, exercise_id: str) -> int:
    """Send the exercise's best score to every line item this user launched it from (a grading job calls this
    after each graded submission). A platform that refuses or cannot be reached leaves its link's `error`
    set, and the next graded submission tries again. Returns how many line items took the score."""
    db = get_session()
    links = db.scalars(select(LtiGradeLink).where(LtiGradeLink.user_id == user_id,
                                                  LtiGradeLink.exercise_id == exercise_id)).all()
    if not links:
        return 0
    best = best_score(user_id, exercise_id)
    if best is None:
        return 0
    sent = 0
    for link in links:
        if link.sent_score == best and link.error is None:
            continue
        try:
            _put_score(link, best)
        except LtiRefused as exc:  # this site's own reason
            log.warning("the score of %s for user %s was not sent: %s", exercise_id, user_id, exc.message)
            link.error = exc.message
        except Exception as exc:  # noqa: BLE001 - the platform's refusal or a network failure: kept, retried later
            detail = exc.detail if isinstance(exc, OutboundError) else f"{type(exc).__name__}: {exc}"
            log.warning("sending the score of %s for user %s failed: %s", exercise_id, user_id, printable(detail))
            link.error = SCORE_NOT_TAKEN  # never the upstream text: it may be anything the URL answered
        else:
            link.sent_score, link.sent_at, link.error = best, utcnow(), None
            sent += 1
        db.commit()
    return sent


def _put_score(link: LtiGradeLink, score: float) -> None:
    from pylti1p3.assignments_grades import AssignmentsGradesService
    from pylti1p3.grade import Grade
    from pylti1p3.lineitem import LineItem
    from pylti1p3.service_connector import ServiceConnector

    from academy.content import get_content

    claim = json.loads(link.ags_json)
    if SCORE_SCOPE not in claim.get("scope", []):
        raise LtiRefused("the LMS did not allow this tool to send scores for this link")
    platform = link.identity.platform
    if is_removed(platform):
        raise LtiRefused("this LMS's registration was removed")
    service = AssignmentsGradesService(ServiceConnector(_registration(platform), _http()), claim)
    timestamp = utcnow().replace(microsecond=0).isoformat() + "Z"
    grade = (Grade().set_score_given(score).set_score_maximum(100).set_timestamp(timestamp)
             .set_activity_progress("Completed").set_grading_progress("FullyGraded").set_user_id(link.identity.sub))
    if claim.get("lineitem"):
        service.put_grade(grade)  # the resource link's own line item
        return
    try:
        title = get_content().exercise(link.exercise_id).title
    except KeyError:
        title = link.exercise_id
    lineitem = (LineItem().set_tag(f"dla:{link.exercise_id}").set_label(title).set_score_maximum(100)
                .set_resource_id(link.exercise_id).set_resource_link_id(link.resource_link_id))
    service.put_grade(grade, lineitem)  # found by its tag, or made


# -- the tool's keys and the deep-linking pick ------------------------------------------------------------------

@bp.get("/jwks")
def jwks() -> ResponseReturnValue:
    platforms = get_session().scalars(active_platforms().order_by(LtiPlatform.id)).all()
    keys = [public_jwk(p.tool_private_key) for p in platforms]
    return {"keys": keys}, 200, {"Cache-Control": "max-age=300"}


@bp.post("/deep-link")
def deep_link() -> ResponseReturnValue:
    """The instructor picked a lesson or an exercise: a signed deep-linking response for the launch, posted to the
    platform by this browser. The launch is found only in the browser that made it (its LTI session id), and
    answers once."""
    from pylti1p3.deep_link_resource import DeepLinkResource
    from pylti1p3.exception import LtiException
    from pylti1p3.lineitem import LineItem

    launch_id = request.form.get("launch_id", "")
    try:
        message_launch = _message_launch(launch_id) if launch_id.startswith("lti1p3-launch-") else None
    except LtiException:
        message_launch = None
    if message_launch is None or not message_launch.is_deep_link_launch():
        return _refused(gettext("This choice belongs to no deep-linking launch of this browser (it may have been "
                                "answered already, or be older than an hour). Start again from the LMS."), 400)
    platform = find_platform(message_launch.get_iss(), message_launch.get_client_id())
    if platform is None:
        return _refused(gettext("This LMS is no longer registered here."), 403)
    g.lti_platform = platform
    course = _course()
    target = request.form.get("target", "")
    kind, _, item = target.partition(":")
    if kind == "exercise" and item in course.exercises:
        exercise = course.exercises[item]
        title = exercise.title
    elif kind == "lesson" and item in {lesson.id for lesson in course.lessons}:
        exercise, title = None, course.lesson(item).title
    else:
        flash(gettext("Choose a lesson or an exercise."), "error")
        return render_template("lti/pick.html", launch_id=launch_id, course=course, platform=platform), 400
    # One signed answer per launch: the launch is used up here, before anything is signed, by a DELETE that only
    # one request can win; the others (a double click, six tabs) are told it was answered.
    if not _storage_for_launch().take(launch_id):
        return _refused(gettext("This deep-linking launch was answered already. Start again from the LMS."), 409)
    base = public_base()
    resource = (DeepLinkResource().set_url(f"{base}{url_for('lti.launch')}").set_title(title)
                .set_custom_params({TARGET: target}).set_target("window"))
    if exercise is not None:
        resource.set_lineitem(LineItem().set_score_maximum(100).set_label(title).set_resource_id(exercise.id)
                              .set_tag(f"dla:{exercise.id}"))
    deep_link = message_launch.get_deep_link()
    jwt_value = deep_link.get_response_jwt([resource])
    return_url = message_launch.get_launch_data()[
        "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"]["deep_link_return_url"]
    return render_template("lti/return.html", return_url=return_url, jwt=jwt_value, title=title)


def _storage_for_launch() -> Any:
    """The storage bound to this browser's LTI session id (as the launch was saved)."""
    storage = _storage()
    lti_request, _conf, _session, cookies = _services()
    storage.set_request(lti_request)
    session_id = cookies.get_cookie(storage.get_session_cookie_name())
    if session_id:
        storage.set_session_id(session_id)
    return storage


# -- registration pages (instructors) ---------------------------------------------------------------------------

def _platform_form() -> PlatformForm:
    return PlatformForm(name=request.form.get("name", ""), issuer=request.form.get("issuer", ""),
                        client_id=request.form.get("client_id", ""),
                        auth_login_url=request.form.get("auth_login_url", ""),
                        auth_token_url=request.form.get("auth_token_url", ""),
                        key_set_url=request.form.get("key_set_url", ""),
                        deployment_ids=tuple(request.form.get("deployment_ids", "").split()),
                        auth_audience=request.form.get("auth_audience", ""))


@bp.route("/platforms", methods=["GET", "POST"])
@instructor_required
def platforms() -> ResponseReturnValue:
    db = get_session()
    status = 200
    form = None
    if request.method == "POST":
        form = _platform_form()
        try:
            platform = register_platform(form)
        except AccountError as exc:
            db.rollback()
            flash(str(exc), "error")
            status = 400
        else:
            db.commit()
            flash(gettext("Registered %(name)s. Give the LMS the tool's URLs below.", name=platform.name), "info")
            return redirect(url_for("lti.platforms"), 303)
    rows = db.scalars(active_platforms().order_by(LtiPlatform.id)).all()
    learners = dict(db.execute(select(LtiIdentity.platform_id, func.count()).group_by(LtiIdentity.platform_id)).all())
    failing = db.scalars(select(LtiGradeLink).where(LtiGradeLink.error.is_not(None))
                         .order_by(LtiGradeLink.updated_at.desc()).limit(20)).all()
    return render_template("lti/platforms.html", platforms=rows, urls=tool_urls(public_base()), form=form,
                           learners=learners, failing=failing), status


@bp.post("/platforms/<int:platform_id>/deployments")
@instructor_required
def platform_deployment(platform_id: int) -> ResponseReturnValue:
    db = get_session()
    platform = _active_platform(platform_id)
    deployment_id = request.form.get("deployment_id", "")
    try:
        add_deployment(platform, deployment_id)
        db.commit()
    except AccountError as exc:
        db.rollback()
        flash(str(exc), "error")
    except IntegrityError:  # the same deployment added a moment ago in another tab
        db.rollback()
        flash(gettext("%(platform)s already has the deployment %(id)s.", platform=platform.name,
                      id=deployment_id.strip()), "error")
    else:
        flash(gettext("Added the deployment to %(name)s.", name=platform.name), "info")
    return redirect(url_for("lti.platforms"), 303)


def _active_platform(platform_id: int) -> LtiPlatform:
    return get_session().scalar(active_platforms().where(LtiPlatform.id == platform_id)) or abort(404)


@bp.route("/platforms/<int:platform_id>/edit", methods=["GET", "POST"])
@instructor_required
def platform_edit(platform_id: int) -> ResponseReturnValue:
    """Correct a registration in place: its name, URLs and token audience (the issuer and client id are what the
    LMS's launches are matched by: a different one is another registration)."""
    db = get_session()
    platform = _active_platform(platform_id)
    form, status = None, 200
    if request.method == "POST":
        form = _platform_form()
        try:
            edit_platform(platform, form)
        except AccountError as exc:
            db.rollback()
            platform = _active_platform(platform_id)
            flash(str(exc), "error")
            status = 400
        else:
            db.commit()
            flash(gettext("Saved the registration %(name)s.", name=platform.name), "info")
            return redirect(url_for("lti.platforms"), 303)
    return render_template("lti/edit.html", platform=platform, form=form), status


@bp.route("/platforms/<int:platform_id>/remove", methods=["GET", "POST"])
@instructor_required
def platform_remove(platform_id: int) -> ResponseReturnValue:
    """Forget a registration, once confirmed: its launches are refused from now on. The accounts its users have stay
    (their work is theirs); registering the same issuer and client id again leads their launches back to them."""
    db = get_session()
    platform = _active_platform(platform_id)
    learners = db.scalar(select(func.count()).select_from(LtiIdentity).where(LtiIdentity.platform_id == platform.id))
    if request.method == "POST":
        if request.form.get("confirm") == "remove":
            name = platform.name
            remove_platform(platform)
            db.commit()
            flash(gettext("Removed the registration %(name)s; its launches are refused from now on. Its learners keep "
                          "their accounts.", name=name), "info")
            return redirect(url_for("lti.platforms"), 303)
        flash(gettext("Nothing was removed: confirm with the button below."), "error")
        return render_template("lti/remove.html", platform=platform, learners=learners), 400
    return render_template("lti/remove.html", platform=platform, learners=learners)
