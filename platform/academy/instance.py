"""The instance folder, made ready by `flask --app academy init-db` and only read by the app.

    <instance>/                the folder itself (DLA_INSTANCE), hidden from learner code
    <instance>/secret_key      signs session cookies unless SECRET_KEY is set: random, mode 0600
    the database               its schema created or upgraded to the newest migration (academy/data/db.py)

`create_app` reads the key (`secret_key_for`) and never writes one: two gunicorn workers starting at
once would otherwise race to make different keys, and an app made by a test or a script would leave files
behind. A serving app without a key refuses to start and says how to make one; an administrator's command
(`create-user`, `worker`, ...) signs no cookie, so it runs without one.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

import click
from flask import Flask

from academy.data import db
from academy.settings import InstanceNotReady, Settings, settings

SECRET_KEY_FILE = "secret_key"
INIT_DB = db.INIT_DB


def secret_key_path(settings: Settings) -> Path:
    return Path(settings.instance_path or ".") / SECRET_KEY_FILE


def secret_key_for(settings: Settings) -> str | None:
    """SECRET_KEY, else the instance's secret_key file; None only for a command that serves no page.

    Raises InstanceNotReady for a serving app (gunicorn, `flask run`, a test client) that has neither."""
    if settings.secret_key:
        return settings.secret_key
    path = secret_key_path(settings)
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        key = ""
    if key or not serves_pages():
        return key or None
    if path.exists():
        raise InstanceNotReady(f"The secret key file {path} is empty: delete it and run `{INIT_DB}` to make a new "
                               "one, or set SECRET_KEY.")
    raise InstanceNotReady(f"No secret key: run `{INIT_DB}` (it creates {path}), or set SECRET_KEY.")


# `flask` commands that want the whole app: `run` serves it, `shell` and `routes` look at it.
WEB_COMMANDS = ("run",)
WEB_FRONT_COMMANDS = ("run", "shell", "routes")


def serves_pages(web_front: bool = False) -> bool:
    """False while a `flask --app academy COMMAND` other than `run` makes the app: such a command signs no
    cookie. Anything else (gunicorn, `flask run`, a test) may serve pages, and pages need the key. With
    `web_front`: whether the app needs its web front (blueprints, limiter, translations) at all, which
    `shell` and `routes` want too."""
    command = click.get_current_context(silent=True)
    return command is None or command.command.name in (WEB_FRONT_COMMANDS if web_front else WEB_COMMANDS)


def create_secret_key(path: Path) -> bool:
    """Write a new random key to `path`, readable by its owner only, unless a key is there. True if written.

    Written to a file of its own with its final mode, then linked into place: no other user ever reads it,
    nobody reads it half-written, and of two commands racing the first keeps its key and the second uses it."""
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_urlsafe(48))
        os.link(draft, path)
    except FileExistsError:
        return False
    finally:
        draft.unlink()
    return True


def init_instance(app: Flask) -> list[str]:
    """Make the instance ready for this version of the app; what it did, one line each (idempotent)."""
    own = settings(app)
    folder = Path(app.instance_path)
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    if own.secret_key:
        lines.append("Secret key: SECRET_KEY (from the settings)")
    else:
        path = secret_key_path(own)
        made = create_secret_key(path)
        lines.append(f"Secret key: {path}{' (created)' if made else ''}")
        app.config["SECRET_KEY"] = path.read_text().strip()
    db.upgrade(app)
    lines.append(f"Database ready: {app.extensions['academy.engine'].url.render_as_string()}")
    return lines
