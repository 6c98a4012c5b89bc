"""LTI 1.3 registrations: `lti-register`, `lti-add-deployment`, `lti-list`."""
from __future__ import annotations

import click
from flask.cli import with_appcontext
from sqlalchemy import select

from academy.cli.base import needs_database
from academy.data.accounts import AccountError
from academy.data.db import get_session
from academy.settings import settings


@click.command("lti-register")
@click.option("--name", required=True, help="How instructors tell this LMS apart (e.g. 'Canvas, Fall term').")
@click.option("--issuer", required=True, help="The platform's issuer (Canvas: https://canvas.instructure.com).")
@click.option("--client-id", required=True, help="The client id the LMS gave the tool (Canvas: its developer key id).")
@click.option("--deployment-id", "deployment_ids", multiple=True,
              help="A deployment id the LMS launches with (repeat it; launches of any other are refused).")
@click.option("--auth-login-url", required=True, help="The LMS's OIDC authorization endpoint.")
@click.option("--auth-token-url", required=True, help="The LMS's OAuth 2 access token endpoint.")
@click.option("--key-set-url", required=True, help="The LMS's public keys (JWKS) URL.")
@click.option("--auth-audience", default="", help="The token endpoint's audience, when the LMS names one.")
@with_appcontext
@needs_database
def lti_register_command(name: str, issuer: str, client_id: str, deployment_ids: tuple[str, ...],
                         auth_login_url: str, auth_token_url: str, key_set_url: str, auth_audience: str) -> None:
    """Register an LMS (an LTI 1.3 platform), with a key pair of its own; prints what to give the LMS."""
    from academy import lti

    try:
        platform = lti.register_platform(lti.PlatformForm(name, issuer, client_id, auth_login_url, auth_token_url,
                                                          key_set_url, deployment_ids, auth_audience))
    except AccountError as exc:
        raise click.ClickException(str(exc)) from None
    get_session().commit()
    click.echo(f"Registered {platform.name} (id {platform.id}): issuer {platform.issuer}, client id "
               f"{platform.client_id}, deployments {', '.join(deployment_ids) or 'none yet (lti-add-deployment)'}.")
    _echo_tool_urls()


def _echo_tool_urls() -> None:
    from academy import lti

    base = settings().public_url
    if base is None:
        click.echo("DLA_PUBLIC_URL is not set: these paths go after the site's public https origin.")
    for what, url in lti.tool_urls(base or "").items():
        click.echo(f"  {what:<10} {url}")


@click.command("lti-add-deployment")
@click.argument("platform_id", type=int)
@click.argument("deployment_id")
@with_appcontext
@needs_database
def lti_add_deployment_command(platform_id: int, deployment_id: str) -> None:
    """Accept launches of another deployment of a registered LMS (Canvas: each installation has one)."""
    from academy import lti
    from academy.data.models import LtiPlatform

    platform = get_session().get(LtiPlatform, platform_id)
    if platform is None:
        raise click.ClickException(f"There is no LMS registration {platform_id} (see lti-list).")
    if lti.is_removed(platform):
        raise click.ClickException(f"{platform.name} (registration {platform_id}) was removed: register its issuer "
                                   "and client id again (lti-register) to bring it back, then add deployments.")
    try:
        lti.add_deployment(platform, deployment_id)
    except AccountError as exc:
        raise click.ClickException(str(exc)) from None
    get_session().commit()
    click.echo(f"{platform.name} now accepts deployment {deployment_id}.")


@click.command("lti-list")
@with_appcontext
@needs_database
def lti_list_command() -> None:
    """The registered LMSes, their deployments, and the tool's URLs to give an LMS; the removed ones apart."""
    from academy import lti
    from academy.data.models import LtiPlatform

    db = get_session()
    for p in db.scalars(lti.active_platforms().order_by(LtiPlatform.id)):
        deployments = ", ".join(d.deployment_id for d in p.deployments) or "none (every launch is refused)"
        click.echo(f"{p.id}  {p.name}: issuer {p.issuer}, client id {p.client_id}, deployments {deployments}")
    removed = db.scalars(select(LtiPlatform).where(LtiPlatform.removed_at.is_not(None)).order_by(LtiPlatform.id)).all()
    if removed:
        click.echo("Removed (their launches are refused; lti-register with the same issuer and client id brings one "
                   "back, with its learners' accounts):")
        for p in removed:
            click.echo(f"{p.id}  {p.name}: issuer {p.issuer}, client id {p.client_id}")
    _echo_tool_urls()
