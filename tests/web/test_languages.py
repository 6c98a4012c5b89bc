"""Languages: per-language URLs with hreflang, the redirect rules, the switcher saved on the account, lesson 1's
translated title and summary (the seeds'), the not-yet-translated notice, Arabic RTL, translation files."""
from __future__ import annotations

import json
import re
from pathlib import Path

from tests.helpers import LESSON, REPO, WebSession

FIRST = f"/lessons/{LESSON}/what-mixed-precision-means"
SEEDS = {code: (REPO.parent / "shared" / "seeds" / name) for code, name in
         (("it", "000_2e6f0a76564a9421.txt"), ("ja", "001_fcaf20938fcc3fe6.txt"), ("ar", "002_5780e82a3381e173.txt"))}
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


def test_expected_texts_are_the_seeds() -> None:
    for code, path in SEEDS.items():
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            assert (lines[0], lines[1], lines[3]) == EXPECTED[code]


def test_lesson_one_in_each_language(web: WebSession) -> None:
    for code, (title, summary, notice) in EXPECTED.items():
        page = web.client.get(f"/{code}{FIRST}").get_data(as_text=True)
        assert f'<html lang="{code}" dir="{"rtl" if code == "ar" else "ltr"}">' in page
        assert f"· {title} · Deep Learning Academy</title>" in page
        assert summary in page and notice in page
        assert f'rel="next" href="/{code}/lessons/{LESSON}/' in page  # links stay in the language
        for other in ("en", "it", "ja", "ar"):
            assert f'<link rel="alternate" hreflang="{other}" href="http://localhost/{other}{FIRST}">' in page
        assert f'<link rel="alternate" hreflang="x-default" href="http://localhost{FIRST}">' in page
        course = web.client.get(f"/{code}/").get_data(as_text=True)
        assert title in course and summary in course
    english = web.client.get(f"/en{FIRST}").get_data(as_text=True)
    assert "Mixed precision with autocast and GradScaler" in english and 'id="not-translated"' not in english
    arabic = web.client.get(f"/ar/lessons/{LESSON}/amp-step").get_data(as_text=True)
    assert '<div id="editor" class="editor" dir="ltr">' in arabic and '<code dir="ltr">train_step(' in arabic
    ui_text = json.loads(re.search(r'id="ui-text">(.*?)</script>', arabic).group(1))  # lesson.js's messages
    assert ui_text["All checks passed. Well done!"] == "نجحت كل الفحوص. أحسنت!"
    assert '<script type="application/json" id="ui-text">{}</script>' in web.client.get(
        f"/lessons/{LESSON}/amp-step").get_data(as_text=True)  # English: lesson.js has its own text


def test_a_url_without_a_language_redirects(web: WebSession) -> None:
    plain = web.client.get(FIRST)
    assert plain.status_code == 200 and "Accept-Language" in plain.headers["Vary"]
    assert '<html lang="en"' in plain.get_data(as_text=True)
    japanese = web.client.get(FIRST + "?x=1", headers={"Accept-Language": "ja-JP,ja;q=0.9,en;q=0.5"})
    assert japanese.status_code == 302 and japanese.location == f"/ja{FIRST}?x=1"
    assert "Accept-Language" in japanese.headers["Vary"]
    assert web.client.get("/", headers={"Accept-Language": "fr, it;q=0.8"}).location == "/it/"
    assert web.client.get("/api/exercises", headers={"Accept-Language": "it"}).status_code == 200  # not the API


def test_the_switcher_is_saved_on_the_account(web: WebSession) -> None:
    web.signup("polyglot@example.org")
    response = web.post("/language", data={"language": "ar", "next": FIRST})
    assert response.status_code == 302 and response.location.endswith(f"/ar{FIRST}")
    # A new browser of the same account, asking for Italian: the saved choice wins.
    other = WebSession(web.client.application.test_client())
    other.signin("polyglot@example.org")
    assert other.client.get(FIRST, headers={"Accept-Language": "it"}).location == f"/ar{FIRST}"
    assert 'selected>AR' in other.client.get(f"/ar{FIRST}").get_data(as_text=True)


def test_translation_files_and_instructor_coverage(make_app, exercises_copy: Path) -> None:  # noqa: ANN001
    lesson = exercises_copy / LESSON
    (lesson / "cards" / "it").mkdir()
    (lesson / "cards" / "it" / "01-what-mixed-precision-means.md").write_text(
        "# Cos'è la precisione mista\n\nPer impostazione predefinita PyTorch calcola in float a 32 bit.\n")
    (lesson / "amp-step" / "exercise.it.yaml").write_text(
        "title: Scrivi un passo di addestramento AMP\nprompt: Scrivi `train_step`.\n"
        "checks:\n  scaled-backward:\n    title: Backward sulla loss scalata\n")
    web = WebSession(make_app(EXERCISES_DIR=str(exercises_copy)).test_client())
    card = web.client.get(f"/it{FIRST}").get_data(as_text=True)
    assert "<h1>Cos&#39;è la precisione mista</h1>" in card and "calcola in float a 32 bit" in card
    exercise = web.client.get(f"/it/lessons/{LESSON}/amp-step").get_data(as_text=True)
    assert "<h1>Scrivi un passo di addestramento AMP</h1>" in exercise
    assert "Backward sulla loss scalata" in exercise  # a check title, in the editor's data
    from academy.db import get_session
    from academy.models import User
    web.signup("teacher@example.org")
    with web.client.application.app_context():
        user = get_session().query(User).filter_by(email="teacher@example.org").one()
        user.role = "instructor"
        get_session().commit()
    overview = web.client.get("/instructor/").get_data(as_text=True)
    table = overview[overview.index('id="translations"'):]
    from grader.course import load_course

    steps = len(load_course(exercises_copy).lesson("mixed-precision").steps)
    assert re.search(rf'data-language="it">4 of {steps + 2}</td>', table)  # title, summary, a card, an exercise
    assert re.search(rf'data-language="ja">2 of {steps + 2}</td>', table)


def test_api_errors_follow_accept_language(web: WebSession) -> None:
    """The JSON API answers in the language Accept-Language names (lesson.js sends its page's), else English:
    scripts, tokens and a learner who chose Arabic on the pages all get English without the header."""
    web.signup("arabic@example.org")
    page = web.post("/auth/tokens", data={"name": "t"}).get_data(as_text=True)
    token = "dla_" + page.split("<code>dla_", 1)[1].split("</code>", 1)[0]
    web.post("/language", data={"language": "ar", "next": "/"})  # saved on the account: the API ignores it
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', web.client.get("/ar/").get_data(as_text=True)).group(1)
    english = 'Send a JSON object, e.g. {"exercise": "...", "code": "..."}.'
    arabic = web.client.post("/api/submissions", json=["not", "an", "object"],
                             headers={"X-CSRF-Token": csrf, "Accept-Language": "ar"})
    assert arabic.status_code == 400
    assert arabic.json == {"error": 'أرسل كائن JSON، مثل {"exercise": "...", "code": "..."}.'}
    assert "Accept-Language" in arabic.headers["Vary"]
    plain = web.client.post("/api/submissions", json=["not", "an", "object"], headers={"X-CSRF-Token": csrf})
    assert plain.status_code == 400 and plain.json == {"error": english}
    script = web.client.application.test_client()
    bearer = script.post("/api/submissions", json=["not", "an", "object"], headers={"Authorization": f"Bearer {token}"})
    assert bearer.status_code == 400 and bearer.json == {"error": english}
    refused = script.get("/api/progress", headers={"Authorization": "Bearer dla_nope", "Accept-Language": "it-IT,it"})
    assert refused.status_code == 401 and refused.json["error"].startswith("Il token API non è valido")


def test_catalogs_are_current_and_complete(tmp_path: Path) -> None:
    """The committed messages.pot is what extraction gives today, and it/ja/ar translate every message."""
    import subprocess
    import sys

    from babel.messages.pofile import read_po

    academy = REPO / "platform" / "academy"
    fresh = tmp_path / "messages.pot"
    pybabel = [sys.executable, "-c", "from babel.messages.frontend import main; main()", "-q"]
    subprocess.run([*pybabel, "extract", "-F", "babel.cfg", "-k", "lazy_gettext", "-k", "lazy_pgettext:1c,2",
                    "--no-location", "-o", str(fresh), "."], cwd=academy, check=True)
    ids = {(m.context, m.id) for m in read_po(fresh.open("rb")) if m.id}
    assert ids == {(m.context, m.id) for m in read_po((academy / "translations" / "messages.pot").open("rb"))
                   if m.id}, "run pybabel extract (docs/web.md, Languages)"
    assert (None, "Step") in ids and ("optimizer step", "Step") in ids  # a lesson's step, figures.js' column
    for code in ("it", "ja", "ar"):
        catalog = read_po((academy / "translations" / code / "LC_MESSAGES" / "messages.po").open("rb"))
        assert {(m.context, m.id) for m in catalog if m.id and m.string and not m.fuzzy} == ids, code
    # What lesson.js and figures.js look up with T("..."): each one is in i18n.JS_MESSAGES, so the page has it.
    from academy.i18n import JS_MESSAGES, msgid

    looked_up = set()
    for script in ("lesson.js", "figures.js"):
        looked_up |= set(re.findall(r'\bT\("([^"]+)"', (academy / "static" / script).read_text(encoding="utf-8")))
    assert looked_up and looked_up <= {msgid(message) for message in JS_MESSAGES}


def test_account_instructor_and_error_pages_in_arabic(app) -> None:  # noqa: ANN001
    """The pages beyond the lessons speak the page's language too: account, sign-out, an error page, the
    instructor's pages, and the flash message of a real action (a wrong current password)."""
    from academy.auth import create_account
    from academy.db import get_session

    with app.app_context():
        create_account("teacher@example.org", "password123", role="instructor")
        get_session().commit()
    teacher = WebSession(app.test_client())
    teacher.signin("teacher@example.org")
    wrong = teacher.post("/ar/auth/password", data={"current": "not-it", "new": "password456"})
    assert wrong.status_code == 303 and wrong.location.endswith("/ar/auth/account")
    pages = {
        "/ar/auth/account": ["كلمة المرور الحالية غير صحيحة.", "<h1>حسابك</h1>", "سجّل الخروج من كل مكان آخر",
                             "رموز API", "(مدرّس)"],
        "/ar/auth/signout": ["<h1>تسجيل الخروج</h1>"],
        "/ar/no-such-page": ["404 · غير موجود", "العودة إلى الدورة"],
        f"/ar/lessons/{LESSON}/no-such-step": [f"لا توجد في الدرس «{LESSON}» خطوة «no-such-step»."],
        "/ar/instructor/": ["تحقّق من كل التمارين", "الترجمات", "لم يُشغَّل"],
        "/ar/instructor/learners/": ["<h1>المتعلّمون</h1>", "التمارين الناجحة"],
        "/ar/instructor/exercises/mixed-precision/amp-step": ["المتعلّمون الناجحون", "الفحوص الأكثر إخفاقاً",
                                                               "لا توجد إرسالات بعد."],
    }
    english = ["Your current password is not right.", "Your account", "Sign out everywhere else", "Change password",
               "Not Found", "Back to the course", "There is no step", "Validate all exercises", "Translations",
               "not run", "Learners who passed", "Most frequently failing checks", "No submissions yet.",
               "Exercises passed", "has no step"]
    for url, translated in pages.items():
        page = teacher.client.get(url).get_data(as_text=True)
        assert '<html lang="ar" dir="rtl">' in page, url
        for text in translated:
            assert text in page, (url, text)
        for text in english:
            assert text not in page, (url, text)
    guest = WebSession(app.test_client()).guest()
    warning = guest.client.get("/ar/auth/signout").get_data(as_text=True)
    assert "أنت ضيف. تسجيل الخروج يُفقدك تقدمك" in warning and "Signing out loses" not in warning


def test_absolute_links_come_from_the_public_url(make_app) -> None:  # noqa: ANN001
    app = make_app(PUBLIC_URL="https://academy.example.org/course")
    page = app.test_client().get(f"/it{FIRST}", headers={"Host": "evil.example"}).get_data(as_text=True)
    assert f'hreflang="en" href="https://academy.example.org/course/en{FIRST}"' in page
    assert "evil.example" not in page
