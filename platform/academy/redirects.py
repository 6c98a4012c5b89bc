"""Where a redirect may go: only to a path on this site (`safe_next`). Its own module, below every blueprint, because
the language switch (academy/i18n/) and sign-in (academy/web/auth/) both follow a "next" the browser sent."""
from __future__ import annotations

from urllib.parse import unquote, urlsplit


def safe_next(target: str | None, default: str) -> str:
    """`target` when it is a path on this site, else `default`.

    Checked as the browser will read it, not as sent: browsers drop tabs and newlines from URLs and read
    a backslash as a slash, so "/\\t/evil.example" and "/\\\\evil.example" both mean //evil.example.
    Anything with a control character or a backslash is refused outright rather than cleaned up, and so is a
    target that reads as another site once percent-decoded ("/%2F%2Fevil.example", "%2F%2Fevil.example",
    "/%5Cevil.example"), however often encoded: no page of this site has such a path, and a proxy or a later
    redirect that decodes it would leave the site.
    """
    if not target:
        return default
    seen = target
    while True:
        if any(ord(ch) < 0x20 or ord(ch) == 0x7F or ch == "\\" for ch in seen):
            return default
        parts = urlsplit(seen)
        if parts.scheme or parts.netloc or not seen.startswith("/") or seen.startswith("//"):
            return default
        decoded = unquote(seen)
        if decoded == seen:
            return target
        seen = decoded
