"""Rate limits per account and per client address (Flask-Limiter), and who the client is behind proxies.

Per-account limits are strict (one person), per-address limits generous: a classroom of 40 behind one
NAT address must still be able to start as guests, sign in, save drafts and submit. The counters live in
Redis when REDIS_URL is set (every web process shares them, and Redis makes each hit atomic), in this
process's memory otherwise (the embedded one-process default).
"""
from __future__ import annotations

import os
from typing import Any, Callable

from flask import Flask, current_app, g, request
from flask_limiter import Limiter
from werkzeug.middleware.proxy_fix import ProxyFix

# config key: (environment variable, default, what it limits). Limits are Flask-Limiter strings
# ("10 per minute"; several separated by ";"). `create_app` reads each once; docs/web.md lists them.
LIMITS: dict[str, tuple[str, str, str]] = {
    "LIMIT_GUESTS_PER_ADDRESS": ("DLA_LIMIT_GUESTS_PER_ADDRESS", "60 per 10 minutes;300 per day",
                                 "new guests from one client address"),
    "LIMIT_SIGNUPS_PER_ADDRESS": ("DLA_LIMIT_SIGNUPS_PER_ADDRESS", "60 per hour",
                                  "sign-ups from one client address"),
    "LIMIT_SIGNINS_PER_ADDRESS": ("DLA_LIMIT_SIGNINS_PER_ADDRESS", "300 per hour",
                                  "sign-in attempts from one client address"),
    "LIMIT_SIGNIN_FAILURES": ("DLA_LIMIT_SIGNIN_FAILURES", "5 per 5 minutes",
                              "wrong passwords for one account from one client address (then a back-off)"),
    "LIMIT_SUBMISSIONS_PER_ADDRESS": ("DLA_LIMIT_SUBMISSIONS_PER_ADDRESS", "200 per minute",
                                      "submissions from one client address"),
    "LIMIT_DRAFTS_PER_ACCOUNT": ("DLA_LIMIT_DRAFTS_PER_ACCOUNT", "120 per minute",
                                 "draft saves of one account (the editor saves 0.7 s after typing stops)"),
    "LIMIT_DRAFTS_PER_ADDRESS": ("DLA_LIMIT_DRAFTS_PER_ADDRESS", "2400 per minute",
                                 "draft saves from one client address"),
}


def settings_from_environment() -> dict[str, Any]:
    """The limit settings (each from its environment variable, else its default) and the proxy count."""
    values: dict[str, Any] = {key: os.environ.get(env) or default for key, (env, default, _) in LIMITS.items()}
    # How many reverse proxies in front of the app append to X-Forwarded-For (and set -Proto/-Host).
    # 0: the client is the TCP peer. Set it to exactly the number of proxies you run: one more would let
    # a client choose its own address by sending the header itself.
    values["TRUSTED_PROXIES"] = int(os.environ.get("DLA_TRUSTED_PROXIES", "0"))
    return values


def client_address() -> str:
    """The client's address: the TCP peer, or what the trusted proxies reported (ProxyFix)."""
    return request.remote_addr or "unknown"


def account_key() -> str:
    """The signed-in account; requests without one count under their address (login_required answers them)."""
    user = getattr(g, "user", None)
    return f"user-{user.id}" if user is not None else f"anonymous@{client_address()}"


def limit(key: str) -> Callable[[], str]:
    """A limit string read from the app's configuration when the request is checked."""
    return lambda: current_app.config[key]


def _storage_uri(app: Flask) -> str:
    return app.config.get("REDIS_URL") or os.environ.get("REDIS_URL") or "memory://"


# The one Limiter; views in the blueprints declare their limits on it, `init_app` binds it to an app.
limiter = Limiter(key_func=client_address, strategy="moving-window", headers_enabled=True,
                  key_prefix="academy-limits")


def init_app(app: Flask) -> None:
    """Bind the limiter (after security.init_app: the account key needs g.user) and trust the proxies."""
    app.config.setdefault("RATELIMIT_STORAGE_URI", _storage_uri(app))
    # Redis trouble must not turn every page into a 500: the limits then hold per process, in memory.
    app.config.setdefault("RATELIMIT_IN_MEMORY_FALLBACK_ENABLED", True)
    app.config.setdefault("RATELIMIT_STORAGE_OPTIONS", {"socket_connect_timeout": 3, "socket_timeout": 5})
    limiter.init_app(app)
    proxies = int(app.config.get("TRUSTED_PROXIES", 0))
    if proxies > 0:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)  # type: ignore[method-assign]
