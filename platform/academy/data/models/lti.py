"""LTI 1.3's tables (academy/lti/): registered platforms, deployments, identities, grade links, PyLTI1p3's values."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from academy.data.models.base import Base, utcnow
from academy.data.models.users import User


class LtiPlatform(Base):
    """One registration of this tool in an LMS: the platform's issuer and the client id it gave the tool,
    its endpoints, and the key pair the tool signs with for it (its public half is in /lti/jwks). An
    issuer may register the tool more than once (several client ids): a registration is the pair."""
    __tablename__ = "lti_platforms"
    __table_args__ = (UniqueConstraint("issuer", "client_id"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))  # how instructors tell registrations apart
    issuer: Mapped[str] = mapped_column(String(255))
    client_id: Mapped[str] = mapped_column(String(255))
    auth_login_url: Mapped[str] = mapped_column(String(1000))  # the platform's OIDC authorization endpoint
    auth_token_url: Mapped[str] = mapped_column(String(1000))  # its OAuth 2 token endpoint (grade passback)
    key_set_url: Mapped[str] = mapped_column(String(1000))  # its public keys (JWKS)
    auth_audience: Mapped[str | None] = mapped_column(String(1000))  # the token endpoint's audience, if not its URL
    tool_private_key: Mapped[str] = mapped_column(Text)  # PEM; the tool's signing key for this registration
    tool_kid: Mapped[str] = mapped_column(String(100), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # Set when an instructor removes it: the row stays so that registering the same issuer and client id again
    # brings it back, and its learners' launches find their accounts (academy/lti/registration.py: register_platform).
    removed_at: Mapped[datetime | None] = mapped_column(DateTime)

    deployments: Mapped[list[LtiDeployment]] = relationship(back_populates="platform", cascade="all, delete-orphan",
                                                            order_by="LtiDeployment.id")


class LtiDeployment(Base):
    """A deployment id the platform uses for this registration (Canvas: one per installation). A launch
    naming another deployment is refused."""
    __tablename__ = "lti_deployments"
    __table_args__ = (UniqueConstraint("platform_id", "deployment_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"), index=True)
    deployment_id: Mapped[str] = mapped_column(String(255))

    platform: Mapped[LtiPlatform] = relationship(back_populates="deployments")


class LtiIdentity(Base):
    """An LMS user as this site knows them: the account a launch signs in to. Keyed by the registration,
    the deployment and the platform's `sub`, never by an email or a name the LMS sends: one LMS user can
    only ever reach the account made for them."""
    __tablename__ = "lti_identities"
    __table_args__ = (UniqueConstraint("platform_id", "deployment_id", "sub"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    deployment_id: Mapped[str] = mapped_column(String(255))
    sub: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), unique=True)
    email: Mapped[str | None] = mapped_column(String(254))  # what the LMS said, shown to instructors only
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_launch_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    user: Mapped[User] = relationship()
    platform: Mapped[LtiPlatform] = relationship()


class LtiGradeLink(Base):
    """Where an exercise's best score goes for one LMS user: the line item of the resource link they
    launched it from (the launch's Assignment and Grade Services claim). Written at each launch; read after
    each graded submission (academy/lti/scores.py: send_best_score)."""
    __tablename__ = "lti_grade_links"
    __table_args__ = (UniqueConstraint("identity_id", "resource_link_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    identity_id: Mapped[int] = mapped_column(ForeignKey("lti_identities.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    exercise_id: Mapped[str] = mapped_column(String(200))
    resource_link_id: Mapped[str] = mapped_column(String(255))
    ags_json: Mapped[str] = mapped_column(Text)  # the claim: scope, lineitem and/or lineitems
    sent_score: Mapped[float | None] = mapped_column()  # 0-100, the last score the platform accepted
    sent_at: Mapped[datetime | None] = mapped_column(DateTime)
    error: Mapped[str | None] = mapped_column(Text)  # why the last sending failed; None when it did not
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    identity: Mapped[LtiIdentity] = relationship()


class LtiValue(Base):
    """PyLTI1p3's launch data storage (academy/lti/pylti.py: DatabaseStorage): the OIDC login's nonces and the
    validated launches, each under a key that holds the browser's LTI session id, until it expires. A
    nonce is deleted when a launch uses it, so no launch can be replayed."""
    __tablename__ = "lti_values"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[str] = mapped_column(Text)  # JSON
    expires_at: Mapped[datetime] = mapped_column(DateTime, index=True)
