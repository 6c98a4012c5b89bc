"""Rate limits per account and per client address (Flask-Limiter), and who the client is behind proxies.

Per-account limits are strict (one person), per-address limits generous: a classroom of 40 behind one
NAT address must still be able to start as guests, sign in, save drafts and submit. The counters live in
Redis when REDIS_URL is set (every web process shares them, and Redis makes each hit atomic), in this
process's memory otherwise (the embedded one-process default).
"""
from __future__ import annotations

import ipaddress
import math
import time
from typing import Callable

from flask import Flask, Response, g, request
from flask_babel import gettext
from flask_limiter import Limiter, RateLimitExceeded
from limits import parse_many
from werkzeug.exceptions import HTTPException, TooManyRequests
from werkzeug.middleware.proxy_fix import ProxyFix

from academy.settings import Settings, settings


def client_address() -> str:
    """Who per-address limits count: the TCP peer, or what the trusted proxies reported (ProxyFix); an IPv6
    client as its DLA_IPV6_PREFIX network (one line holds a /64 and picks any address in it), an IPv4-mapped
    one as its IPv4 address."""
    return address_key(request.remote_addr, settings().ipv6_prefix)


def address_key(remote: str | None, ipv6_prefix: int) -> str:
    try:
        address = ipaddress.ip_address((remote or "").split("%", 1)[0])
    except ValueError:
        return remote or "unknown"  # not an IP address (a unix socket's peer): counted as it is
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/{ipv6_prefix}", strict=False))
    return str(address)


def account_key() -> str:
    """The signed-in account; requests without one count under their address (login_required answers them)."""
    user = getattr(g, "user", None)
    return f"user-{user.id}" if user is not None else f"anonymous@{client_address()}"


def limit(name: str) -> Callable[[], str]:
    """A limit string (a field of academy/settings.py, e.g. "limit_drafts_per_account"), read when the
    request is checked."""
    getattr(Settings, name)  # a misspelt name fails at import, not at the first request
    return lambda: getattr(settings(), name)


# The one Limiter; views in the blueprints declare their limits on it, `init_app` binds it to an app.
limiter = Limiter(key_func=client_address, strategy="moving-window", headers_enabled=True,
                  key_prefix="academy-limits")


def spend(name: str, scope: str, message: Callable[[], str]) -> None:
    """Count one action of this client address against the limits of setting `name` (several with ";"),
    under `scope`: for an action that more than one route performs. Above any of them: 429 with
    Retry-After and `message`, and nothing is counted."""
    if not limiter.enabled:  # RATELIMIT_ENABLED = False
        return
    strategy, address = limiter.limiter, client_address()
    items = parse_many(getattr(settings(), name))
    for item in items:
        if not strategy.test(item, scope, address):
            reset = strategy.get_window_stats(item, scope, address).reset_time
            raise TooManyRequests(description=message(), retry_after=seconds_until(reset))
    for item in items:
        strategy.hit(item, scope, address)


UNKNOWN_WAIT_S = 60  # the wait of a 429 that names none (no route answers one today)


def seconds_until(reset_at: float) -> int:
    """Whole seconds until `reset_at` (a Unix time), at least 1: what Retry-After and `retry_after` say."""
    return max(1, math.ceil(reset_at - time.time()))


def retry_after(exc: HTTPException) -> int | None:
    """How long a 429 asks the client to wait: what its raiser set (`spend`, `TooManyRequests(retry_after=)`),
    else, for a Flask-Limiter limit, when the limit it broke frees its next hit."""
    given = exc.get_response().headers.get("Retry-After")
    if given and given.isdigit():
        return max(1, int(given))
    breached = limiter.current_limit if isinstance(exc, RateLimitExceeded) else None
    if breached is not None and breached.breached:
        return seconds_until(breached.window[0])  # its reset time (`reset_at` adds a second)
    return None


def too_many(response: Response, seconds: int) -> Response:
    """Mark `response` as a 429 to retry after `seconds`: its Retry-After is this, whatever Flask-Limiter's
    after-request hook would put there (`_keep_retry_after`)."""
    response.status_code = 429
    response.headers["Retry-After"] = str(seconds)
    g.retry_after = seconds
    return response


def _keep_retry_after(response: Response) -> Response:
    """Every 429 says when to come back, and says what its body says: Flask-Limiter's header hook (which runs
    before this one) would otherwise replace a view's Retry-After by the reset time of whichever limit it
    reports, and write 0 within the last second."""
    if response.status_code == 429:
        given = response.headers.get("Retry-After", "")
        seconds = g.get("retry_after") or (max(1, int(given)) if given.isdigit() else UNKNOWN_WAIT_S)
        response.headers["Retry-After"] = str(seconds)
    return response


def spend_new_guest() -> None:
    """One new guest from this address, whichever route makes it (/auth/guest, or the first Run, Submit or
    quiz answer of a visitor): one budget, DLA_LIMIT_GUESTS_PER_ADDRESS."""
    spend("limit_guests_per_address", "new-guest",
          lambda: gettext("Too many new guests from your network; try again later, or sign in."))


def init_app(app: Flask) -> None:
    """Bind the limiter (after security.init_app: the account key needs g.user) and trust the proxies."""
    app.config.setdefault("RATELIMIT_STORAGE_URI", settings(app).redis_url or "memory://")
    # Redis trouble must not turn every page into a 500: the limits then hold per process, in memory.
    app.config.setdefault("RATELIMIT_IN_MEMORY_FALLBACK_ENABLED", True)
    app.config.setdefault("RATELIMIT_STORAGE_OPTIONS", {"socket_connect_timeout": 3, "socket_timeout": 5})
    app.after_request(_keep_retry_after)  # registered first, so it runs after Flask-Limiter's header hook
    limiter.init_app(app)
    proxies = settings(app).trusted_proxies
    if proxies > 0:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)  # type: ignore[method-assign]
