"""`flask --app academy lti-register` and the commands beside it: a field the registration refuses
(lti/registration.py) is one `Error:` line and exit status 1, never a traceback nor a registration (issue 51: an
issuer without a scheme was accepted from the command line). The URLs are address literals, so nothing here
resolves a name."""
from __future__ import annotations

from flask import Flask
from sqlalchemy import func, select

from academy.data.db import get_session
from academy.data.models import LtiPlatform

PUBLIC = "https://93.184.215.14"  # a public address: allowed, and never fetched by a registration


def register(app: Flask, **fields: str):  # noqa: ANN201
    values = {"name": "Campus LMS", "issuer": "https://lms.example.org", "client-id": "tool-1",
              "auth-login-url": f"{PUBLIC}/auth", "auth-token-url": f"{PUBLIC}/token",
              "key-set-url": f"{PUBLIC}/jwks", **fields}
    args = ["lti-register", "--deployment-id", "d1"]
    for name, value in values.items():
        args += [f"--{name}", value]
    return app.test_cli_runner().invoke(args=args)


def registrations(app: Flask) -> int:
    with app.app_context():
        return get_session().scalar(select(func.count()).select_from(LtiPlatform))


def refused(result, message: str) -> None:  # noqa: ANN001
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # click's own exit: a message, not an exception's traceback
    assert "Traceback" not in result.output
    assert result.output.startswith(f"Error: {message}"), result.output
    assert result.output.count("\n") == 1


def test_an_issuer_without_a_scheme_is_refused_plainly(app: Flask) -> None:
    issuer_error = "The issuer must be the LMS's https:// URL with a host name"
    refused(register(app, issuer="lms.example.org"), issuer_error)
    refused(register(app, issuer="http://lms.example.org"), issuer_error)
    # A line break in the issuer would forge log lines wherever it is written.
    refused(register(app, issuer="https://lms.example.org\nLTI launch accepted"), issuer_error)
    assert registrations(app) == 0


def test_a_url_the_site_must_not_reach_is_refused_plainly(app: Flask) -> None:
    refused(register(app, **{"key-set-url": "https://127.0.0.1/jwks"}),
            "The platform's public key set (JWKS) URL names a host on a loopback")
    refused(register(app, **{"auth-token-url": "https://169.254.169.254/latest/meta-data/"}),
            "The access token URL names a host on a loopback")
    refused(register(app, **{"auth-login-url": "ftp://lms.example.org/auth"}),
            "The authorization (OIDC auth) URL must be an https:// URL")
    assert registrations(app) == 0
    made = register(app)
    assert made.exit_code == 0 and made.output.startswith("Registered Campus LMS (id 1): issuer "
                                                          "https://lms.example.org"), made.output
    assert registrations(app) == 1


def test_a_removed_registration_is_listed_apart_and_takes_no_deployment(app: Flask) -> None:
    from academy import lti

    assert register(app).exit_code == 0
    assert register(app, name="Other LMS", **{"client-id": "tool-2"}).exit_code == 0
    with app.app_context():
        lti.remove_platform(get_session().get(LtiPlatform, 2))
        get_session().commit()
    listed = app.test_cli_runner().invoke(args=["lti-list"]).output
    active, removed = listed.split("Removed")
    assert "1  Campus LMS" in active and "Other LMS" not in active
    assert "2  Other LMS" in removed
    refused(app.test_cli_runner().invoke(args=["lti-add-deployment", "2", "d2"]),
            "Other LMS (registration 2) was removed")
    assert app.test_cli_runner().invoke(args=["lti-add-deployment", "1", "d2"]).exit_code == 0
