"""The languages of the interface and of the course."""
from __future__ import annotations

LANGUAGES = {"en": "English", "it": "Italiano", "ja": "日本語", "ar": "العربية"}
TRANSLATED = tuple(code for code in LANGUAGES if code != "en")
RTL = {"ar"}
def N_(message: str) -> str:  # noqa: N802 (the gettext name pybabel extracts)
    """Marks an English message for the catalogs where it is defined; `gettext(message)` translates it where it
    is shown (a page, or a JSON error in the language the request asks for)."""
    return message
