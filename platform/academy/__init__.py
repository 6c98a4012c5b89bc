"""Deep Learning Academy, the web platform (Flask app factory, flaskr style).

    flask --app academy init-db                      make the instance ready: folder, secret key, database
    flask --app academy create-user EMAIL --instructor
    flask --app academy run                          development server
    python -m academy worker                         an RQ grading worker (same as flask --app academy worker)

Configuration: academy/settings.py (every setting, its environment variable, default and meaning), read
once here; docs/web.md lists them.

`create_app` reads the settings and the secret key and wires the parts together, nothing more: it migrates
no database (`init-db` does, academy/instance.py), writes no file, and loads no course (the first
`get_content()` does, academy/content.py). So a serving process finds out on its first request, not at
import, what it has to do. An administrator's command (`flask --app academy create-user`, `init-db`, `worker`,
...) gets the app without its web front: no blueprints, no rate limiter, no translations, none of their
imports (`serves_pages`: every `flask` command but `run`, `shell` and `routes`), so it starts in well under
a second (benchmarks/cli_startup.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    from academy import instance
    from academy import settings as settings_module

    test_config = test_config or {}
    instance_path = settings_module.instance_folder(test_config)
    app = Flask(__name__, instance_path=instance_path, instance_relative_config=True)
    config_file = settings_module.read_config_file(app.instance_path)
    settings = settings_module.load(Path(app.instance_path), config_file, test_config)
    app.extensions["academy.settings"] = settings
    # Flask and its extensions read app.config: the settings in upper case, then what config.py and
    # test_config add for them (e.g. TESTING, SESSION_COOKIE_NAME).
    app.config.from_mapping({name.upper(): value for name, value in vars(settings).items()})
    app.config.from_mapping(
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # Secure by default; browsers accept Secure cookies from http://localhost and 127.0.0.1 too.
        SESSION_COOKIE_SECURE=not settings.insecure_cookies,
        # The oldest cookie signature accepted at all; each session's own idle and absolute limits
        # (security.py: DLA_SESSION_IDLE_DAYS, DLA_SESSION_MAX_DAYS, DLA_GUEST_IDLE_DAYS) end it sooner.
        PERMANENT_SESSION_LIFETIME=int(max(settings.session_max_days, settings.session_idle_days,
                                           settings.guest_idle_days) * 86400) + 60,
    )
    app.config.from_mapping({key: value for key, value in {**config_file, **test_config}.items()
                             if key.lower() not in vars(settings)})
    app.config["SECRET_KEY"] = instance.secret_key_for(settings)

    from academy import cli, content, jobs, runners
    from academy.data import db

    db.init_app(app)
    content.init_app(app)
    jobs.on_graded(app, send_lms_scores)
    if not instance.serves_pages(web_front=True):
        jobs.init_app(app)
        runners.init_app(app)
        cli.init_app(app)
        return app

    from academy import i18n, lti, tutor
    from academy.web import api, auth, errors, inputs, instructor, lessons, limits, security

    app.config["MAX_CONTENT_LENGTH"] = inputs.MAX_BODY_BYTES
    inputs.init_app(app)
    security.init_app(app)
    limits.init_app(app)  # after security: per-account limits need the user that security loads
    i18n.init_app(app)  # after security: the learner's saved language
    jobs.init_app(app)
    runners.init_app(app)
    errors.init_app(app)
    cli.init_app(app)
    app.register_blueprint(auth.bp)
    app.register_blueprint(lessons.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(instructor.bp)
    app.register_blueprint(lti.bp)
    app.register_blueprint(tutor.bp)
    app.add_url_rule("/", endpoint="index", view_func=lessons.course)
    return app


def send_lms_scores(user_id: int, exercise_id: str) -> None:
    """The LTI part's grade passback, the jobs' hook after a graded verdict (academy.jobs.on_graded): imported when
    a verdict is stored, not when a command makes the app."""
    from academy import lti

    lti.send_lms_scores(user_id, exercise_id)


def init_db(config: dict[str, Any] | None = None) -> list[str]:
    """`flask --app academy init-db` from Python (tests, benchmarks): the app that `config` (create_app's
    test_config) describes, made as that command makes it (no key needed yet), then its instance made ready.
    Its engine is closed afterwards, so a database server need not wait for it."""
    import click

    from academy.instance import init_instance

    with click.Context(click.Command("init-db")):  # what serves_pages() sees while the command runs
        app = create_app(config)
    try:
        return init_instance(app)
    finally:
        app.extensions["academy.jobs"].shutdown()
        app.extensions["academy.engine"].dispose()
