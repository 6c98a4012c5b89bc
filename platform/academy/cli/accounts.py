"""Accounts: `create-user`, `create-token`, `set-role` (`change_role`, the one place a role changes), `confirm-email`,
`remove-idle-guests`."""
from __future__ import annotations

import getpass
from datetime import timedelta

import click
from flask.cli import with_appcontext
from sqlalchemy import delete, func, select

from academy.cli.base import needs_database
from academy.data.accounts import AccountError, create_account, new_api_token
from academy.data.db import get_session
from academy.data.models import PENDING, Submission, User, utcnow
from academy.data.roles import ROLES, audit, change_role, describe
from academy.logline import printable
from academy.settings import settings


@click.command("create-user")
@click.argument("email")
@click.option("--instructor", is_flag=True, help="Give the account the instructor role.")
@click.option("--name", help="The display name (what the gradebooks' Student column shows).")
@click.password_option(help="The password (asked for when not given).")
@with_appcontext
@needs_database
def create_user_command(email: str, instructor: bool, name: str | None, password: str) -> None:
    """Create an account (use --instructor for the first instructor; set-role changes an existing one's role)."""
    try:
        user = create_account(email, password, role="instructor" if instructor else "learner", name=name)
    except AccountError as exc:
        holder = get_session().scalar(select(User).where(func.lower(User.email) == email.strip().lower()))
        if holder is not None and instructor:
            raise click.ClickException(
                f"An account with the email {holder.email} already exists (id {holder.id}), and create-user makes "
                f"new accounts only. To make it an instructor: flask --app academy set-role {holder.email} "
                "instructor") from None
        raise click.ClickException(str(exc)) from None
    get_session().commit()
    click.echo(f"Created {user.role} {user.email} (id {user.id}).")


@click.command("create-token")
@click.argument("email")
@click.option("--name", default="cli", show_default=True, help="A label to tell tokens apart.")
@with_appcontext
@needs_database
def create_token_command(email: str, name: str) -> None:
    """Create a personal API token for an account and print it (shown only once)."""
    db = get_session()
    user = db.scalar(select(User).where(func.lower(User.email) == email.strip().lower()))
    if user is None:
        raise click.ClickException(f"No account with email {email}.")
    token = new_api_token(user, name)
    db.commit()
    click.echo(token)


@click.command("remove-idle-guests")
@click.option("--days", type=int, help="Idle for longer than this (default DLA_GUEST_IDLE_DAYS, 30).")
@with_appcontext
@needs_database
def remove_idle_guests_command(days: int | None) -> None:
    """Delete guests with no request for DAYS days, with everything they did (run it daily, e.g. from cron).

    Guests cost nothing to make, so without this their rows, drafts and submissions would pile up for ever.
    Accounts are never removed.
    """
    days = days if days is not None else settings().guest_idle_days
    cutoff = utcnow() - timedelta(days=days)
    db = get_session()
    pending = select(Submission.user_id).where(Submission.status.in_(PENDING))
    idle = (User.is_guest.is_(True) & (func.coalesce(User.last_seen_at, User.created_at) < cutoff)
            & User.id.not_in(pending))
    # Drafts, submissions, progress, quiz answers and tokens go with the row (ON DELETE CASCADE).
    removed = db.execute(delete(User).where(idle)).rowcount
    db.commit()
    click.echo(f"Removed {removed} guest(s) idle for more than {days} days.")


# -- roles: the one place that changes one (`set-role` here, the learner page in academy/web/instructor.py) ---------

def operator() -> str:
    """Who runs this command, as far as the system says (the log's "by" for a change from the command line)."""
    try:
        return f"an operator (OS user {getpass.getuser()}) on the command line"
    except (KeyError, OSError):  # no login name nor passwd entry (a container's arbitrary uid)
        return "an operator on the command line"


def find_account(email: str | None, user_id: int | None) -> User:
    """The account a command names by EMAIL or by --user-id (an LMS's account may have no email)."""
    if (email is None) == (user_id is None):
        raise click.UsageError("Name the account by its EMAIL or by --user-id, one of the two.")
    db = get_session()
    if user_id is not None:
        user = db.get(User, user_id)
        if user is None:
            raise click.ClickException(f"There is no account with id {user_id}.")
        return user
    user = db.scalar(select(User).where(func.lower(User.email) == email.strip().lower()))
    if user is None:
        raise click.ClickException(f"No account with email {email}. An account that came from an LMS may have "
                                   "none: name it by --user-id (the number in its page's address, "
                                   "/instructor/learners/ID).")
    return user


@click.command("set-role")
@click.argument("arguments", nargs=-1, required=True, metavar="[EMAIL] ROLE")
@click.option("--user-id", type=int, help="Name the account by its id instead of EMAIL (an LMS's account may "
                                          "have no email).")
@with_appcontext
@needs_database
def set_role_command(arguments: tuple[str, ...], user_id: int | None) -> None:
    """Make an existing account an instructor (ROLE instructor) or a learner again (ROLE learner).

    Every session of the account is signed out and its API tokens are revoked, so the new role holds from its
    next sign-in and no copy of an old cookie or token carries either role; the change is logged. An EMAIL must
    be confirmed (see confirm-email), else whoever signed up first with somebody's address would get that
    person's role. The last instructor stays one: make another account an instructor first.

    \b
    flask --app academy set-role alice@example.org instructor
    flask --app academy set-role --user-id 12 learner
    """
    if len(arguments) != (1 if user_id is not None else 2):
        raise click.UsageError("Give EMAIL and ROLE (or --user-id ID and ROLE), e.g. set-role "
                               "alice@example.org instructor.")
    role = arguments[-1].strip().lower()
    if role not in ROLES:
        raise click.UsageError(f"ROLE is {' or '.join(ROLES)}, not {arguments[-1]!r}.")
    user = find_account(arguments[0] if user_id is None else None, user_id)
    if user_id is None and not user.email_confirmed:
        raise click.ClickException(
            f"The address {user.email} is not confirmed: the account holding it (id {user.id}) may not be its "
            "owner's, since anyone can sign up with any address. Once you know it is, run confirm-email "
            f"{user.email} (or name the account by --user-id {user.id}); or let its owner confirm it from the "
            "account page.")
    try:
        change_role(user, role, by=operator())
    except AccountError as exc:
        raise click.ClickException(str(exc)) from None
    who = f"{user.display_name} (id {user.id})"
    click.echo(f"{who} is now an instructor." if role == "instructor" else f"{who} is no longer an instructor.")
    click.echo("Every session of the account was signed out and its API tokens revoked: the new role holds from "
               "its next sign-in.")


@click.command("confirm-email")
@click.argument("email")
@with_appcontext
@needs_database
def confirm_email_command(email: str) -> None:
    """Count the address EMAIL as confirmed for the account holding it, as if its owner had opened the link.

    Only once you know that the account is the address's owner's (it is what the LMS gradebooks match learners
    by, and what set-role names an account by). Sign-ups that wait for the address's link are refused from
    then on. The confirmation is logged.
    """
    from academy.data.models import SignupLinkMail
    from academy.web import confirmation

    user = find_account(email, None)
    if user.email_confirmed:
        raise click.ClickException(f"The address {user.email} (account id {user.id}) was confirmed already, on "
                                   f"{user.email_confirmed_at:%Y-%m-%d %H:%M} UTC; nothing changed.")
    db = get_session()
    waiting = db.scalar(select(func.count()).select_from(SignupLinkMail).where(SignupLinkMail.email == user.email))
    confirmation.confirm_by_operator(user.email)  # type: ignore[arg-type]
    db.commit()
    audit.warning("%s", printable(f"address confirmed at {utcnow():%Y-%m-%dT%H:%M:%SZ}: {operator()} confirmed "
                                 f"the address of {describe(user)}", None))
    click.echo(f"The address {user.email} is confirmed for {user.display_name} (id {user.id}).")
    if waiting:
        click.echo(f"{waiting} sign-up(s) waiting for this address's link will be refused: the address is taken.")
