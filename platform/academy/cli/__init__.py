"""`flask --app academy ...` commands for administrators.

None of them needs torch or the course but `regrade` and `worker`, and none imports either before it runs.
The app a command runs in has no web front (academy/__init__.py, `create_app`), and this module imports
only what every command needs (the database, the accounts); each command imports the rest itself, so
`create-user` starts in well under a second (benchmarks/cli_startup.py). A command that uses the database
says so when its schema is missing or behind (`needs_database`), naming `init-db`.

    base.py       needs_database, init-db
    accounts.py   create-user, create-token, set-role (change_role), confirm-email, remove-idle-guests
    grading.py    regrade, worker
    lti.py        lti-register, lti-add-deployment, lti-list
"""
from __future__ import annotations

from flask import Flask

from academy.cli.accounts import (
    confirm_email_command,
    create_token_command,
    create_user_command,
    find_account,
    operator,
    remove_idle_guests_command,
    set_role_command,
)
from academy.cli.base import init_db_command, needs_database
from academy.cli.grading import regrade_command, regrade_table, wait_for_regrade, worker_command
from academy.cli.lti import lti_add_deployment_command, lti_list_command, lti_register_command

__all__ = ["find_account", "init_app", "needs_database", "operator",
           "regrade_table", "wait_for_regrade", "worker_command"]


def init_app(app: Flask) -> None:
    """Every command, on `flask --app academy` and on `python -m academy` alike (academy/__main__.py)."""
    for command in (init_db_command, remove_idle_guests_command, create_user_command, create_token_command,
                    regrade_command, worker_command, lti_register_command, lti_add_deployment_command,
                    lti_list_command, set_role_command, confirm_email_command):
        app.cli.add_command(command)
