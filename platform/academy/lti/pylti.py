"""PyLTI1p3's seams, filled with this site's: the registrations it looks up (the database), where nonces and
launches live (`lti_values`, under the browser's LTI session id; a nonce used once), the cookies it trusts, the
requests session it is given (academy/lti/outbound.py), and its message launch with the key set fetched and kept
here and the claims LTI 1.3 requires checked.

PyLTI1p3, requests and jwcrypto are imported by the functions that need them, not with this module."""
from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from flask import request
from sqlalchemy import delete

from academy.data.accounts import gettext
from academy.data.db import get_session
from academy.data.models import LtiPlatform, LtiValue, utcnow
from academy.logline import printable
from academy.lti.claims import LAUNCH_LIFETIME_S, SESSION_ID
from academy.lti.keys import public_pem
from academy.lti.outbound import OutboundError, Policy, fetch_key_set, key_sets
from academy.lti.registration import find_platform

if TYPE_CHECKING:
    from pylti1p3.registration import Registration

log = logging.getLogger(__name__)


def outbound_session() -> Any:
    """The requests session PyLTI1p3 is given: only where academy/lti/outbound.py allows, no redirects, bounded."""
    from pylti1p3.service_connector import REQUESTS_USER_AGENT

    from academy.lti import outbound

    return outbound.session(Policy.from_settings(), REQUESTS_USER_AGENT)


# What pages and stored errors say when the LMS cannot be reached or answers wrongly: one fixed reason each,
# never the upstream text (it may be anything the URL answered, an internal service's included), and the same
# whether the port was closed, filtered or answered (scores.py has SCORE_NOT_TAKEN).
KEY_SET_UNAVAILABLE = "the LMS's key set could not be fetched"


def registration_of(platform: LtiPlatform) -> Registration:
    from pylti1p3.registration import Registration

    registration = (Registration().set_issuer(platform.issuer).set_client_id(platform.client_id)
                    .set_auth_login_url(platform.auth_login_url).set_auth_token_url(platform.auth_token_url)
                    .set_key_set_url(platform.key_set_url).set_tool_private_key(platform.tool_private_key)
                    .set_tool_public_key(public_pem(platform.tool_private_key)))
    if platform.auth_audience:
        registration.set_auth_audience(platform.auth_audience)
    return registration


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
            return registration_of(platform) if platform is not None else None

        def find_deployment(self, iss: str, deployment_id: str) -> Any:
            return None

        def find_deployment_by_params(self, iss: str, deployment_id: str, client_id: str, *args: Any,
                                      **kwargs: Any) -> Any:
            platform = find_platform(iss, client_id)
            if platform is None or deployment_id not in {d.deployment_id for d in platform.deployments}:
                return None
            return Deployment().set_deployment_id(deployment_id)

    return DatabaseToolConf()


def launch_data_storage() -> Any:
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


def services() -> tuple[Any, Any, Any, Any]:
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
        """PyLTI1p3's launch, with the key set fetched through academy/lti/outbound.py and kept (key_sets), and the
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


def message_launch(launch_id: str | None = None) -> Any:
    lti_request, tool_conf, session_service, cookies = services()
    storage = launch_data_storage()
    message_launch = _launch_class()
    if launch_id is not None:
        return message_launch.from_cache(launch_id, lti_request, tool_conf, session_service=session_service,
                                         cookie_service=cookies, launch_data_storage=storage,
                                         requests_session=outbound_session())
    launch = message_launch(lti_request, tool_conf, session_service=session_service, cookie_service=cookies,
                            requests_session=outbound_session())
    launch.set_launch_data_storage(storage)
    return launch


def storage_for_launch() -> Any:
    """The storage bound to this browser's LTI session id (as the launch was saved)."""
    storage = launch_data_storage()
    lti_request, _conf, _session, cookies = services()
    storage.set_request(lti_request)
    session_id = cookies.get_cookie(storage.get_session_cookie_name())
    if session_id:
        storage.set_session_id(session_id)
    return storage
