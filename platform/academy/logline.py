"""Values written into the server's log, one line each, whatever they hold.

A value that came from outside (an LMS's issuer, a request's path or User-Agent, an upstream error, an email)
may hold a line break, an escape sequence or a bidirectional override: written as it is, it forges or hides log
lines. `printable` writes every control or format character, line or paragraph separator and the backslash as
a Python escape (\\n, \\x1b, \\u202e, \\\\), so a value stays on its line and reads as what it was.
"""
from __future__ import annotations

import unicodedata


def _safe(ch: str, quote: bool) -> bool:
    if ch == "\\" or (quote and ch == '"'):
        return False
    category = unicodedata.category(ch)
    return category[0] != "C" and category not in ("Zl", "Zp")


def printable(value: object, limit: int | None = 300, *, quote: bool = False) -> str:
    """`value` as one log-safe line: at most `limit` characters of it (a longer value ends with "..."), every
    unsafe character escaped; `quote` escapes `"` too (for fields the access log writes between quotes)."""
    text = str(value)
    cut = limit is not None and len(text) > limit
    if cut:
        text = text[:limit]
    escaped = "".join(ch if _safe(ch, quote) else ("\\" + ch if ch in '"\\' else
                                                   ch.encode("unicode_escape").decode("ascii")) for ch in text)
    return escaped + ("..." if cut else "")
