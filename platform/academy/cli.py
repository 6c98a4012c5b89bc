"""`flask --app academy ...` commands for administrators.

None of them needs torch or the course but `regrade` and `worker`, and none imports either before it runs.
The app a command runs in has no web front (academy/__init__.py, `create_app`), and this module imports
only what every command needs (the database, the accounts); each command imports the rest itself, so
`create-user` starts in well under a second (benchmarks/cli_startup.py). A command that uses the database
says so when its schema is missing or behind (`needs_database`), naming `init-db`.
"""
from __future__ import annotations

import functools
import getpass
import logging
import time
from datetime import timedelta
from typing import Any, Callable, TypeVar

import click
from flask import Flask, current_app
from flask.cli import with_appcontext
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import aliased

from academy.data.accounts import AccountError, create_account, gettext, new_api_token, revoke_tokens
from academy.data.db import check_schema, get_session
from academy.data.models import PENDING, JobStatus, RegradeRun, Submission, User, utcnow
from academy.instance import init_instance
from academy.logline import printable
from academy.settings import InstanceNotReady, settings

Command = TypeVar("Command", bound=Callable[..., Any])
# Who was made or unmade an instructor, whose address an operator confirmed, by whom, when: one WARNING line
# each (the server's log: its stderr; a command's own stderr), so that it shows whatever the logging
# configuration, every value in it escaped (academy/logline.py).
audit = logging.getLogger("academy.audit")
ROLES = ("learner", "instructor")


def needs_database(command: Command) -> Command:
    """The command's database at the schema this code needs, else a plain error naming `init-db`."""
    @functools.wraps(command)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            check_schema(current_app._get_current_object())  # type: ignore[attr-defined]
        except InstanceNotReady as exc:
            raise click.ClickException(str(exc)) from None
        return command(*args, **kwargs)
    return checked  # type: ignore[return-value]


@click.command("init-db")
@with_appcontext
def init_db_command() -> None:
    """Make the instance ready: its folder, its secret key, the database schema (Alembic migrations).

    Run it once before the first start and after every upgrade; running it again changes nothing.
    """
    for line in init_instance(current_app._get_current_object()):  # type: ignore[attr-defined]
        click.echo(line)


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


@click.command("regrade")
@click.argument("exercise")
@click.option("--wait", is_flag=True, help="Stay until the regrade is done and print every verdict, old and new.")
@with_appcontext  # also when invoked through app.cli directly (app.test_cli_runner), not only by `flask`
@needs_database
def regrade_command(exercise: str, wait: bool) -> None:
    """Grade the finished submissions of EXERCISE again with its current checks (e.g. after changing them).

    Exit status 1 when the run stopped or a submission could not be graded (with --wait).
    """
    from academy import jobs
    from academy.content import get_content
    from academy.runners import runner

    if exercise not in get_content().course.exercises:
        raise click.ClickException(f"There is no exercise '{exercise}'.")
    run, started = jobs.request_regrade(exercise)
    if started:
        click.echo(f"Regrading {run.total} finished submission(s) of {exercise} in the background (run {run.id}).")
    else:
        click.echo(f"A regrade of {exercise} is already {run.status} (run {run.id}, {run.total} submission(s)); "
                   "not starting another.")
    if not wait:
        click.echo(f"See the outcome on /instructor/exercises/{exercise}, or wait for it: "
                   f"flask --app academy regrade {exercise} --wait")
        if runner().runs_here:
            # Without REDIS_URL the jobs run on this process's threads, which it finishes before exiting.
            click.echo("No job queue is configured (REDIS_URL), so this command grades them itself and "
                       "returns when they are done.")
        return
    run = wait_for_regrade(run.id)
    click.echo(regrade_table(run))
    if run.status == JobStatus.ERROR or run.failed:
        raise click.exceptions.Exit(1)


def wait_for_regrade(run_id: int, poll_s: float = 0.5) -> RegradeRun:
    """Poll the run until it is done or ended in error (Ctrl-C stops waiting, not the regrade)."""
    from academy import jobs

    db = get_session()
    while True:
        db.rollback()  # end the read transaction: SQLite would keep showing the snapshot it started with
        run = db.get(RegradeRun, run_id, populate_existing=True)  # the row, not the session's stale copy
        if not run.busy:
            return run
        if run.updated_at < utcnow() - jobs.REGRADE_STALE_AFTER:  # nothing is working on it: do not wait forever
            raise click.ClickException(f"Regrade run {run.id} is {run.status} but has not moved since "
                                       f"{run.updated_at:%Y-%m-%d %H:%M:%S} UTC; is a worker running?")
        time.sleep(poll_s)


def _verdict_text(verdict: dict[str, Any] | None) -> str:
    return f"{verdict['status']} {verdict['score'] * 100:.0f}%" if verdict else "not graded"


def regrade_table(run: RegradeRun) -> str:
    """The summary of a finished run: a row per submission, the failures, then the counts."""
    rows = [("submission", "learner", "old", "new", "changed")]
    rows += [(str(e["submission"]), e["learner"], _verdict_text(e["old"]), _verdict_text(e["new"]),
              "yes" if e["changed"] else "no") for e in run.entries]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines += [f"submission {e['submission']} not graded: {e['error']}" for e in run.entries if e["error"]]
    if run.error_message:
        lines.append(f"The regrade ended in error: {run.error_message}")
    lines.append(f"{run.regraded} regraded: {run.changed} changed, {run.unchanged} unchanged, "
                 f"{run.failed} failed to grade (run {run.id}, {run.status})")
    return "\n".join(lines)


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


@click.command("worker")
@click.option("--burst", is_flag=True, help="Quit when the queue is empty (for scripts and tests).")
@click.option("--name", help="Worker name shown by `rq info` (default HOST.PID).")
@click.option("--pool", "pool_size", type=int, help="Warm grading processes (default DLA_WARM_POOL or 2; 0 = cold).")
@with_appcontext
def worker_command(burst: bool, name: str | None, pool_size: int | None) -> None:
    """Grade queued submissions from Redis (REDIS_URL) with the best sandbox of this host.

    It says first whether this host can grade at all, then whether the database is ready (run_worker)."""
    from academy.runners.rq import run_worker  # imports rq and redis only when they are wanted

    run_worker(current_app._get_current_object(), burst=burst, name=name, pool_size=pool_size)  # type: ignore[attr-defined]


# -- roles: the one place that changes one (`set-role` here, the learner page in academy/web/instructor.py) ---------

def describe(user: User) -> str:
    """An account as a log line names it: its id (never reused), email and name."""
    return f"account #{user.id} <{user.email or 'no email'}> ({user.name or 'no name'})"


def operator() -> str:
    """Who runs this command, as far as the system says (the log's "by" for a change from the command line)."""
    try:
        return f"an operator (OS user {getpass.getuser()}) on the command line"
    except (KeyError, OSError):  # no login name nor passwd entry (a container's arbitrary uid)
        return "an operator on the command line"


def change_role(user: User, role: str, *, by: str, end_sessions: Callable[[User], None] = User.end_sessions) -> None:
    """Make `user` an instructor (`role` "instructor") or a learner again, end the account's sessions
    (`end_sessions`: every cookie of it; the learner page passes security.end_other_sessions, which keeps the
    acting browser signed in when it is the account's own) and revoke its API tokens, commit, and log who did
    it (`by`) to whom, when. A copy of the account's cookie or token (a shared computer's, a stolen one) must
    neither gain the new role nor keep the old one: the account signs in again and makes new tokens.

    AccountError (its text for the page or the command) when `role` is neither, `user` is a guest (no account:
    it signs up first), already has the role, or is the last instructor: the instructor pages must stay
    reachable by somebody, so another account is made an instructor first. The last-instructor rule holds
    against simultaneous revocations too: the role changes by one UPDATE whose condition counts the
    instructors, after locking their rows (PostgreSQL; SQLite runs one writer at a time)."""
    if role not in ROLES:
        raise AccountError(gettext("A role is either learner or instructor."))
    who = user.display_name
    if user.is_guest:
        raise AccountError(gettext("%(who)s is a guest, not an account: it cannot be an instructor. It signs up "
                                   "first (and keeps its progress).", who=who))
    if user.role == role:
        raise AccountError(gettext("%(who)s is already an instructor; nothing changed.", who=who)
                           if role == "instructor" else
                           gettext("%(who)s is not an instructor; nothing changed.", who=who))
    db = get_session()
    if role == "learner":
        db.execute(select(User.id).where(User.role == "instructor").with_for_update())
        others = aliased(User)
        instructors = select(func.count()).select_from(others).where(others.role == "instructor").scalar_subquery()
        revoked = db.execute(update(User).where(User.id == user.id, User.role == "instructor", instructors > 1)
                             .values(role="learner").execution_options(synchronize_session=False)).rowcount
        db.refresh(user, ["role"])
        if not revoked:
            db.rollback()
            if user.role == "instructor":
                raise AccountError(gettext("%(who)s is the only instructor, so the role stays: somebody must still "
                                           "reach the instructor pages. Make another account an instructor first.",
                                           who=who))
            raise AccountError(gettext("%(who)s is not an instructor; nothing changed.", who=who))
    else:
        user.role = role
    end_sessions(user)
    tokens = revoke_tokens(user)
    db.commit()
    what = "granted the instructor role to" if role == "instructor" else "revoked the instructor role of"
    audit.warning("%s", printable(f"role change at {utcnow():%Y-%m-%dT%H:%M:%SZ}: {by} {what} {describe(user)}; "
                                 f"the account's sessions were ended and its {tokens} API token(s) revoked", None))


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


def init_app(app: Flask) -> None:
    """Every command, on `flask --app academy` and on `python -m academy` alike (academy/__main__.py)."""
    for command in (init_db_command, remove_idle_guests_command, create_user_command, create_token_command,
                    regrade_command, worker_command, lti_register_command, lti_add_deployment_command,
                    lti_list_command, set_role_command, confirm_email_command):
        app.cli.add_command(command)
