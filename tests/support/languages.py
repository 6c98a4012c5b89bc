"""Lesson 1 in the course's translations, as the language tests expect to see it (tests/web/test_languages.py,
tests/browser/test_languages.py): the seeds' title, summary and notice, and its translated cards."""
from __future__ import annotations

from tests.support.paths import LESSON, REPO

# The seeds' title, summary and notice (lines 1, 2 and 4), kept here so the test runs without shared/.
EXPECTED = {
    "it": ("Precisione mista con autocast e GradScaler",
           "Calcoli a precisione dimezzata per grandi aumenti di velocità",
           "Parti di questa lezione non sono ancora state tradotte e vengono mostrate in inglese."),
    "ja": ("autocastとGradScalerによる混合精度", "半精度計算で大幅に高速化します",
           "このレッスンの一部はまだ翻訳されておらず、英語で表示されています。"),
    "ar": ("الدقة المختلطة باستخدام autocast وGradScaler", "حسابات بنصف الدقة لتسريع كبير",
           "بعض أجزاء هذا الدرس لم تُترجم بعد وتظهر باللغة الإنجليزية."),
}


def translated_cards(code: str) -> dict[str, tuple[str, str]]:
    """Lesson 1's translated cards: English file name -> (title, markdown)."""
    folder = REPO / "exercises" / LESSON / "cards" / code
    cards = {}
    for path in sorted(folder.glob("*.md")):
        first, _, rest = path.read_text(encoding="utf-8").partition("\n")
        cards[path.name] = (first.removeprefix("# "), rest)
    return cards
