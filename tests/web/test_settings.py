"""Settings in one place: read once per app in a stated order, documented from the code, one name each."""
from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from academy import settings as settings_module
from academy.data.db import get_session
from academy.data.models import Submission, User
from academy.settings import Settings, settings
from grader.core.settings import GRADER_SETTINGS
from sandbox.settings import SettingError
from tests.support.paths import REPO

EXERCISE = "mixed-precision/amp-step"


def test_docs_table_is_the_code_table() -> None:
    docs = (REPO / "docs" / "web.md").read_text()
    generated = docs.split("<!-- settings-table:", 1)[1].split("-->", 1)[1].split("<!-- /settings-table -->")[0]
    assert generated.strip() == settings_module.markdown_table(), \
        "docs/web.md's configuration table is stale: paste the output of `python -m academy.settings`"


def test_every_variable_the_code_names_is_a_setting() -> None:
    known = {spec.env for _f, spec in settings_module.fields() if spec.env}
    known |= {spec.env for spec in GRADER_SETTINGS}
    known |= {f.metadata["old_env"] for f, _spec in settings_module.fields() if f.metadata["old_env"]}
    named: dict[str, set[str]] = {}
    for folder in ("platform", "grader", "sandbox"):
        for path in (REPO / folder).rglob("*.py"):
            for name in re.findall(r"\bDLA_[A-Z][A-Z_]+\b", path.read_text()):
                named.setdefault(name, set()).add(str(path.relative_to(REPO)))
    assert {name: files for name, files in named.items() if name not in known} == {}


def test_every_setting_has_a_description_and_one_variable() -> None:
    envs = [spec.env for _f, spec in settings_module.fields() if spec.env] + [s.env for s in GRADER_SETTINGS]
    assert len(envs) == len(set(envs))
    for _f, spec in settings_module.fields():
        assert len(spec.description) > 15, spec


def test_order_defaults_environment_config_file_test_config(make_app, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    assert Settings().guest_idle_days == 30 and Settings().warm_pool == 2  # the defaults
    monkeypatch.setenv("DLA_GUEST_IDLE_DAYS", "7")
    monkeypatch.setenv("DLA_JOB_TIMEOUT", "99")
    monkeypatch.setenv("DLA_QUEUE", "from-env")
    (tmp_path / "instance").mkdir()
    (tmp_path / "instance" / "config.py").write_text("JOB_TIMEOUT = 120\nQUEUE = 'from-config'\n")
    app = make_app(QUEUE="from-test-config")
    read = settings(app)
    assert (read.guest_idle_days, read.job_timeout, read.queue) == (7, 120, "from-test-config")
    assert app.config["JOB_TIMEOUT"] == 120  # Flask's view of the same values
    with pytest.raises(AttributeError):
        read.queue = "changed"  # type: ignore[misc]  # frozen: read once


def test_the_workers_old_pool_name_still_works_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert settings_module.from_environment({"DLA_POOL_SIZE": "1"}) == {"WARM_POOL": 1}
    assert "DLA_POOL_SIZE is the old name of DLA_WARM_POOL" in caplog.text
    both = settings_module.from_environment({"DLA_POOL_SIZE": "1", "DLA_WARM_POOL": "3"})
    assert both == {"WARM_POOL": 3}


def test_a_bad_value_names_the_variable_and_what_it_expects() -> None:
    with pytest.raises(SettingError, match=r"DLA_WARM_POOL='lots' is not valid \(expected a whole number\)"):
        settings_module.from_environment({"DLA_WARM_POOL": "lots"})
    assert settings_module.from_environment({"DLA_CONTENT_RELOAD": "0"}) == {"CONTENT_RELOAD": False}


def test_the_worker_command_is_one_command_on_both_clis() -> None:
    from academy.__main__ import cli as module_cli
    from academy.cli import worker_command

    flask_help = subprocess.run([sys.executable, "-m", "flask", "--app", "academy", "worker", "--help"],
                                capture_output=True, text=True, cwd=REPO, timeout=120)
    module_help = subprocess.run([sys.executable, "-m", "academy", "worker", "--help"],
                                 capture_output=True, text=True, cwd=REPO, timeout=120)
    assert flask_help.returncode == module_help.returncode == 0, flask_help.stderr + module_help.stderr
    assert "Grade queued submissions from Redis" in module_help.stdout
    assert worker_command.help and worker_command.help.startswith("Grade queued submissions from Redis")
    assert flask_help.stdout.split("Options:")[1] == module_help.stdout.split("Options:")[1]
    assert module_cli.create_app is not None


def test_a_cli_command_leaves_the_running_servers_jobs_alone(make_app, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """`flask --app academy create-user` while the server grades must not take its running job onto the
    command's own threads (which end with the command)."""
    server = make_app(REQUEUE_ON_START=False, SANDBOX="no-such-sandbox")
    with server.app_context():
        db = get_session()
        db.add(User(is_guest=True))
        db.add(Submission(user_id=1, exercise_id=EXERCISE, code="a = 1", status="running"))
        db.commit()
    from academy.__main__ import cli

    monkeypatch.setenv("DLA_INSTANCE", server.instance_path)
    monkeypatch.setenv("SECRET_KEY", "test")
    monkeypatch.setenv("DLA_SANDBOX", "no-such-sandbox")
    result = CliRunner().invoke(cli, ["create-user", "new@example.org", "--password", "long enough pw"])
    assert result.exit_code == 0, result.output
    with server.app_context():
        get_session().rollback()
        assert get_session().scalar(select(Submission.status)) == "running"


def test_passwords_are_hashed_with_werkzeugs_scrypt_unless_the_operator_says_otherwise(make_app, monkeypatch) -> None:  # noqa: ANN001
    from werkzeug.security import generate_password_hash

    from tests.support.apps import WebSession

    # The default is werkzeug's own (this suite runs with a cheaper one, tests/conftest.py).
    assert Settings().password_hash == "scrypt:32768:8:1"
    assert generate_password_hash("x").startswith(Settings().password_hash + "$")
    monkeypatch.delenv("DLA_PASSWORD_HASH")
    app = make_app()
    web = WebSession(app.test_client())
    assert web.signup("ada@example.org").status_code == 302
    with app.app_context():
        stored = get_session().scalar(select(User)).password_hash
    assert stored.startswith("scrypt:32768:8:1$") and "password123" not in stored


def test_another_hash_method_applies_to_new_passwords_and_old_hashes_still_verify(make_app, monkeypatch) -> None:  # noqa: ANN001
    from werkzeug.security import generate_password_hash

    from academy.web.auth.blueprint import _dummy_hash
    from tests.support.apps import WebSession

    monkeypatch.setenv("DLA_PASSWORD_HASH", "pbkdf2:sha256:1000")
    app = make_app()
    web = WebSession(app.test_client())
    assert web.signup("ada@example.org").status_code == 302
    with app.app_context():
        user = get_session().scalar(select(User))
        assert user.password_hash.startswith("pbkdf2:sha256:1000$")
        user.password_hash = generate_password_hash("password123", method="scrypt:1024:8:1")  # set before the change
        get_session().commit()
    web.post("/auth/signout")
    assert web.signin("ada@example.org").status_code == 302
    # An unknown email pays the same method's work as a known one.
    with mock.patch("academy.web.auth.blueprint._dummy_hash", wraps=_dummy_hash) as dummy:
        assert web.signin("nobody@example.org").status_code == 401
    assert dummy.call_args.args == ("pbkdf2:sha256:1000",)
    assert _dummy_hash("pbkdf2:sha256:1000").startswith("pbkdf2:sha256:1000$")


@pytest.mark.parametrize("value", ["md5", "scrypt", "pbkdf2:sha1:1000", "pbkdf2:sha256:0", "scrypt:1000:8:1",
                                   "scrypt:1024:0:1", "scrypt:0:8:1", "scrypt:64:1:1", "scrypt:65536:1:1",
                                   "scrypt:2097152:8:1", "scrypt:1024:8:2000", "scrypt:1024:8:1 trailing"])
def test_a_password_hash_method_outside_what_werkzeug_hashes_with_is_refused(value: str) -> None:
    spec = next(spec for f, spec in settings_module.fields() if f.name == "password_hash")
    with pytest.raises(SettingError, match="DLA_PASSWORD_HASH="):
        spec.get({"DLA_PASSWORD_HASH": value})


def test_the_scrypt_methods_accepted_are_exactly_those_werkzeug_hashes_with() -> None:
    from werkzeug.security import generate_password_hash

    for n, r, p in [(2**k, r, p) for k in range(1, 17) for r in (1, 2, 8) for p in (1, 3) if 2**k * r <= 2**18]:
        method = f"scrypt:{n}:{r}:{p}"
        try:
            generate_password_hash("x", method=method)
            werkzeug_takes = True
        except ValueError:
            werkzeug_takes = False
        try:
            settings_module.password_method(method)
            accepted = True
        except ValueError:
            accepted = False
        assert accepted == werkzeug_takes, method


def test_a_bad_method_in_the_config_file_or_test_config_is_refused_too(make_app) -> None:  # noqa: ANN001
    with pytest.raises(SettingError, match="PASSWORD_HASH='md5' is not valid"):
        make_app(PASSWORD_HASH="md5")
