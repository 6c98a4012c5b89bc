"""The page's language: the prompt names it in English and repeats it after the question (where a small model heeds
it most); an answer's own letters tell whether the model followed, so the panel can say when it did not."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from academy.tutor.language import written_in
from academy.tutor.prompt import messages

ENGLISH = "Your line 11 calls backward on the raw loss. Which card explains why the loss is scaled first?"
ARABIC = "السطر 11 في شيفرتك يستدعي backward على الخسارة غير المضاعفة. أي بطاقة تشرح لماذا نضاعف الخسارة أولاً؟"
JAPANESE = "11行目は、スケールしていない損失で backward を呼んでいます。どのカードが理由を説明していますか？"
ITALIAN = "La tua riga 11 chiama backward sulla perdita non scalata. Quale scheda spiega perché la perdita è scalata?"


@pytest.mark.parametrize(("text", "language", "expected"), [
    (ENGLISH, "ar", False), (ARABIC, "ar", True),
    (ENGLISH, "ja", False), (JAPANESE, "ja", True),
    (ENGLISH, "it", False), (ITALIAN, "it", True),
    (ENGLISH, "en", True), (ITALIAN, "en", False),
    # code is the same in every language: an Arabic answer quoting English code is still Arabic
    (ARABIC + "\n```python\nscaler.scale(loss).backward()  # the scaled loss, then the step\n```", "ar", True),
    ("`scaler.scale(loss).backward()`", "ar", None),  # too little prose to tell
    ("", "ja", None),
])
def test_an_answer_s_language_is_read_from_its_letters(text: str, language: str, expected: bool | None) -> None:
    assert written_in(text, language) is expected


def test_the_prompt_asks_for_the_page_s_language_in_english_and_after_the_question() -> None:
    context = SimpleNamespace(step=SimpleNamespace(title="The AMP step"),
                              lesson=SimpleNamespace(title="Mixed precision"), evidence="LATEST RUN: none yet")
    arabic = messages(context, "لماذا؟", "ar")
    assert "Answer in Arabic" in arabic[0]["content"] and "العربية" not in arabic[0]["content"]
    assert arabic[-1]["content"].rstrip().endswith("Answer in Arabic, not in English.")
    assert arabic[-1]["content"].index("</question>") < arabic[-1]["content"].index("Answer in Arabic")
    assert messages(context, "どうして？", "ja")[-1]["content"].endswith("Answer in Japanese, not in English.")
    english = messages(context, "Why?", "en")
    assert english[-1]["content"].endswith("</question>") and "Answer in English" in english[0]["content"]


def test_the_embedded_model_is_asked_for_english_and_the_panel_says_so(make_tutor_app) -> None:  # noqa: ANN001
    from academy.tutor.views import answers_in
    from tests.support.apps import WebSession
    from tests.support.tutor import LESSON, STEP

    for model, told in (("", True), ("qwen2.5:7b-instruct", False)):
        app = make_tutor_app(TUTOR_MODEL=model)
        web = WebSession(app.test_client()).guest()
        arabic = web.client.get(f"/ar/lessons/{LESSON}/{STEP}").get_data(as_text=True)
        assert ('id="tutor-english"' in arabic) is told and 'id="tutor"' in arabic
        assert 'id="tutor-english"' not in web.client.get(f"/lessons/{LESSON}/{STEP}").get_data(as_text=True)
        with app.test_request_context():
            assert answers_in("ar") == ("en" if told else "ar") and answers_in("en") == "en"
