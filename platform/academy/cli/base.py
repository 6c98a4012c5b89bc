"""What every command shares: `needs_database` and `init-db` (the audit log is academy/data/roles.py's)."""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

import click
from flask import current_app
from flask.cli import with_appcontext

from academy.data.db import check_schema
from academy.instance import init_instance
from academy.settings import InstanceNotReady

Command = TypeVar("Command", bound=Callable[..., Any])

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
