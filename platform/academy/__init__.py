"""Deep Learning Academy, the web platform (Flask app factory, flaskr style).

    flask --app academy init-db                      create/upgrade the database
    flask --app academy create-user EMAIL --instructor
    flask --app academy run                          development server

Configuration (environment, or `test_config`): DATABASE_URL (default SQLite in the instance folder),
DLA_SANDBOX (auto | local | docker), DLA_EXERCISES, SECRET_KEY (else a key kept in the instance folder),
DLA_INSTANCE (the instance folder). See docs/web.md.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from flask import Flask

from grader.course import default_root

MAX_REQUEST_BYTES = 320 * 1024  # a 256 KB submission as JSON, with escaping headroom


def _secret_key(instance: Path) -> str:
    """A stable random key kept in the instance folder, so sessions survive restarts."""
    path = instance / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(48))
        path.chmod(0o600)
    return path.read_text().strip()


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    instance = (test_config or {}).get("INSTANCE_PATH") or os.environ.get("DLA_INSTANCE")
    app = Flask(__name__, instance_path=str(Path(instance).resolve()) if instance else None,
                instance_relative_config=True)
    os.makedirs(app.instance_path, exist_ok=True)
    from academy import limits

    app.config.from_mapping(
        DATABASE_URL=os.environ.get("DATABASE_URL")
        or f"sqlite:///{Path(app.instance_path) / 'academy.sqlite'}",
        SANDBOX=os.environ.get("DLA_SANDBOX", "auto"),
        EXERCISES_DIR=os.environ.get("DLA_EXERCISES") or str(default_root()),
        GRADING_WORKERS=int(os.environ.get("DLA_GRADING_WORKERS", "2")),
        WARM_POOL=int(os.environ.get("DLA_WARM_POOL", "2")),  # warm grading processes (0: cold ones)
        SUBMISSION_RATE=(int(os.environ.get("DLA_SUBMISSIONS_PER_MINUTE", "10")), 60),  # (count, seconds)
        CONTENT_RELOAD=os.environ.get("DLA_CONTENT_RELOAD", "1") == "1",
        REQUEUE_ON_START=True,
        MAX_CONTENT_LENGTH=MAX_REQUEST_BYTES,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # Secure by default; browsers accept Secure cookies from http://localhost and 127.0.0.1 too.
        # Set DLA_INSECURE_COOKIES=1 only to reach a development server by another host name over http.
        SESSION_COOKIE_SECURE=os.environ.get("DLA_INSECURE_COOKIES") != "1",
        PERMANENT_SESSION_LIFETIME=60 * 60 * 24 * 30,
        GUEST_IDLE_DAYS=int(os.environ.get("DLA_GUEST_IDLE_DAYS", "30")),  # remove-idle-guests removes older
        **limits.settings_from_environment(),  # rate limits and DLA_TRUSTED_PROXIES (academy/limits.py)
    )
    app.config.from_pyfile("config.py", silent=True)
    if test_config:
        app.config.from_mapping(test_config)
    app.config["SECRET_KEY"] = (app.config.get("SECRET_KEY") or os.environ.get("SECRET_KEY")
                                or _secret_key(Path(app.instance_path)))

    from academy import api, auth, cli, content, db, errors, inputs, instructor, jobs, lessons, security

    inputs.init_app(app)
    db.init_app(app)
    db.upgrade(app)
    content.reload_content(app)
    security.init_app(app)
    limits.init_app(app)  # after security: per-account limits need the user that security loads
    jobs.init_app(app)
    errors.init_app(app)
    cli.init_app(app)
    app.register_blueprint(auth.bp)
    app.register_blueprint(lessons.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(instructor.bp)
    app.add_url_rule("/", endpoint="index", view_func=lessons.course)
    if app.config["REQUEUE_ON_START"]:
        jobs.requeue_unfinished(app)
    return app
