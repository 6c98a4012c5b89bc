"""In which language the model answered: the prompt asks for the page's language, and a small model often answers
in English anyway. The answer's own letters decide (no model, no list of words per language beyond a few), so the
panel can say honestly when the answer is not in the page's language, whatever model serves it.
"""
from __future__ import annotations

import re

# The language's English name, as the prompt names it: a model trained mostly on English follows "Arabic" more
# often than "العربية".
PROMPT_NAMES = {"en": "English", "it": "Italian", "ja": "Japanese", "ar": "Arabic"}

_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_ARABIC = re.compile(r"[\u0600-\u06FF\u0750-\u077F\u08A0-\u08FF\uFB50-\uFDFF\uFE70-\uFEFF]")
_JAPANESE = re.compile(r"[\u3040-\u309F\u30A0-\u30FF\u4E00-\u9FFF\uFF66-\uFF9F]")
_WORD = re.compile(r"[a-zàèéìíòóùú']+", re.IGNORECASE)
# Short words frequent in Italian prose and rare in English prose (and the reverse): enough to tell the two apart
# in a paragraph, which is all this needs.
_ITALIAN = {"il", "lo", "la", "le", "gli", "di", "del", "della", "che", "è", "non", "per", "con", "una", "uno",
            "sono", "questo", "questa", "come", "nel", "nella", "alla", "al", "dei", "delle", "più", "perché",
            "anche", "ma", "se", "si", "tuo", "tua", "quando", "dove", "devi", "puoi", "riga"}
_ENGLISH = {"the", "of", "and", "is", "are", "to", "in", "that", "this", "it", "you", "your", "for", "with",
            "not", "be", "on", "as", "what", "which", "when", "why", "should", "does", "line"}
# Code in the answer (a fenced block, a `code span`) is English-looking in every language: left out.
_CODE = re.compile(r"```.*?(```|$)|`[^`\n]*`", re.DOTALL)


def prompt_name(language: str) -> str:
    return PROMPT_NAMES.get(language, "English")


def written_in(text: str, language: str) -> bool | None:
    """Whether `text` is written in `language` (en, it, ja, ar); None where there is too little prose to tell."""
    prose = _CODE.sub(" ", text)
    letters = _LETTER.findall(prose)
    if len(letters) < 12:
        return None
    if language == "ar":
        return len(_ARABIC.findall(prose)) >= 0.5 * len(letters)
    if language == "ja":
        return len(_JAPANESE.findall(prose)) >= 0.3 * len(letters)
    words = [w.lower() for w in _WORD.findall(prose)]
    italian = sum(w in _ITALIAN for w in words)
    english = sum(w in _ENGLISH for w in words)
    if language == "it":
        return italian > english
    if language == "en":
        return english >= italian and not _ARABIC.search(prose) and not _JAPANESE.search(prose)
    return None
