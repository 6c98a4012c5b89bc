"""LMS registrations: what registering a platform takes and checks (`PlatformForm`), registering, editing and
removing one (a removed one keeps its row: the same issuer and client id bring it back, and its learners' accounts
with it), its deployments, and finding the registration a login or launch names. The caller commits."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flask import request
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from academy.data.accounts import AccountError, gettext
from academy.data.db import get_session
from academy.data.models import LtiDeployment, LtiPlatform, utcnow
from academy.lti.keys import new_key_pair
from academy.lti.outbound import OutboundError, Policy
from academy.settings import settings


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
