"""The accounts of LMS users: an LMS user is an account keyed by the registration, the deployment and the
platform's `sub` (`LtiIdentity`), never by an email or a name the LMS sends, and is always a learner here."""
from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from academy.data.accounts import AccountError, clean_name, clean_sis_id
from academy.data.db import get_session
from academy.data.models import LtiIdentity, LtiPlatform, User, utcnow
from academy.lti.claims import DEPLOYMENT, LIS


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
