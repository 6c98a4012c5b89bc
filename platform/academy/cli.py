"""`flask --app academy ...` commands for administrators (init-db lives with the database in db.py)."""
from __future__ import annotations

import click
from flask import Flask
from sqlalchemy import func, select

from academy.auth import AccountError, create_account
from academy.db import get_session
from academy.models import User
from academy.security import new_api_token


@click.command("create-user")
@click.argument("email")
@click.option("--instructor", is_flag=True, help="Give the account the instructor role.")
@click.password_option(help="The password (asked for when not given).")
def create_user_command(email: str, instructor: bool, password: str) -> None:
    """Create an account (use --instructor for the first instructor)."""
    try:
        user = create_account(email, password, role="instructor" if instructor else "learner")
    except AccountError as exc:
        raise click.ClickException(str(exc)) from None
    get_session().commit()
    click.echo(f"Created {user.role} {user.email} (id {user.id}).")


@click.command("create-token")
@click.argument("email")
@click.option("--name", default="cli", show_default=True, help="A label to tell tokens apart.")
def create_token_command(email: str, name: str) -> None:
    """Create a personal API token for an account and print it (shown only once)."""
    db = get_session()
    user = db.scalar(select(User).where(func.lower(User.email) == email.strip().lower()))
    if user is None:
        raise click.ClickException(f"No account with email {email}.")
    token = new_api_token(user, name)
    db.commit()
    click.echo(token)


def init_app(app: Flask) -> None:
    app.cli.add_command(create_user_command)
    app.cli.add_command(create_token_command)
    from academy.queue import worker_command

    app.cli.add_command(worker_command)
