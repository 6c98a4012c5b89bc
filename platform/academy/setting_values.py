"""How a setting's text becomes its value: `setting` (a field with its variable, default, meaning and parser) and
the parsers the settings share (rates, origins, password methods, networks, host names)."""
from __future__ import annotations

import re
from dataclasses import field
from typing import Any, Callable
from urllib.parse import urlsplit

from sandbox.settings import Setting


def setting(env: str | None, default: Any, description: str, parse: Callable[[str], Any] = str,
            shown_default: str = "", old_env: str | None = None) -> Any:
    """A field of `Settings`: read from `env` (None: only from config.py / test_config)."""
    return field(default=default, metadata={
        "setting": Setting(env or "", default, description, parse, shown_default), "old_env": old_env})


def per_minute(value: str) -> tuple[int, int]:
    return int(value), 60


def public_origin(value: str) -> str:
    """An origin with an optional path (`https://host[:port][/prefix]`), kept without its trailing slash."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(value)
    return value.strip().rstrip("/")


def untried_cell(value: str) -> str:
    if value.strip().lower() not in ("blank", "zero"):
        raise ValueError(value)
    return value.strip().lower()


PASSWORD_METHOD = re.compile(r"^(?:scrypt:(\d+):(\d+):(\d+)|pbkdf2:sha256:(\d+))$", re.ASCII)


def password_method(value: str) -> str:
    """werkzeug's method string for new password hashes, held to what werkzeug (3.1) will hash with:
    `scrypt:N:r:p` (N a power of two, within the memory werkzeug lets OpenSSL use) or `pbkdf2:sha256:ITERATIONS`.
    A method werkzeug refused would only show at the first sign-up (a 500), and at every sign-in of an unknown
    email while known ones got their 401: an account oracle."""
    method = value.strip()
    match = PASSWORD_METHOD.match(method)
    if not match:
        raise ValueError(value)
    if match[4] is not None:
        if int(match[4]) < 1:
            raise ValueError(value)
        return method
    n, r, p = (int(part) for part in match.groups()[:3])
    memory = 132 * n * r * p  # werkzeug's maxmem for hashlib.scrypt
    if (min(n, r, p) < 1 or n & (n - 1) or not memory < 2**31 - 1 or not n < 2 ** (16 * r)
            or 128 * r * (n + p + 2) > memory):
        raise ValueError(value)
    return method


SMTP_SECURITY = ("starttls", "ssl", "none")


def _choice(value: str, choices: tuple[str, ...]) -> str:
    if value.strip().lower() not in choices:
        raise ValueError(value)
    return value.strip().lower()


def networks(value: str) -> tuple[str, ...]:
    """CIDR networks, comma separated, each checked (`ipaddress.ip_network`) and kept in its canonical form."""
    import ipaddress
    return tuple(str(ipaddress.ip_network(part.strip(), strict=False)) for part in value.split(",") if part.strip())


def ipv6_prefix_length(value: str) -> int:
    if not 32 <= int(value) <= 128:
        raise ValueError(value)
    return int(value)


def host_names(value: str) -> tuple[str, ...]:
    return tuple(name.strip().lower().strip("[]") for name in value.split(",") if name.strip())
