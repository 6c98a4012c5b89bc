"""Languages: per-language URLs with hreflang, the redirect rules, the switcher saved on the account, the course
page with the seeds' four lesson titles, lesson 1's cards and quiz translated, the not-yet-translated notice and
the English marked as English, Arabic RTL, translation files and their errors."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from markupsafe import escape

from tests.support.apps import WebSession
from tests.support.languages import EXPECTED, translated_cards
from tests.support.paths import LESSON, REPO

FIRST = f"/lessons/{LESSON}/what-mixed-precision-means"
SEEDS = {code: (REPO.parent / "shared" / "seeds" / name) for code, name in
         (("it", "000_2e6f0a76564a9421.txt"), ("ja", "001_fcaf20938fcc3fe6.txt"), ("ar", "002_5780e82a3381e173.txt"))}
# The course's four lessons as each seed lists them ("- title", its last four lines).
SEED_TITLES = {
    "it": ["Precisione mista con autocast e GradScaler", "Accumulo dei gradienti per batch grandi",
           "Profilare il collo di bottiglia", "Ridurre l'uso della memoria della GPU"],
    "ja": ["autocastとGradScalerによる混合精度", "大きなバッチのための勾配累積", "ボトルネックをプロファイリングする",
           "GPUメモリ使用量を削減する"],
    "ar": ["الدقة المختلطة باستخدام autocast وGradScaler", "تجميع التدرجات للدفعات الكبيرة", "تحليل عنق الزجاجة",
           "تقليل استخدام ذاكرة GPU"],
}
ENGLISH_MARK = '<span lang="en" dir="ltr">'


def _main(page: str) -> str:
    """The page's own content (the header's language switcher names English, in English, on every page), less
    the phone's step list, which mentions the lesson's other steps by title (an English one marked as such)."""
    main = page[page.index("<main"):page.index("</main>")]
    if '<details class="step-menu"' in main:
        start = main.index('<details class="step-menu"')
        main = main[:start] + main[main.index("</details>", start) + len("</details>"):]
    return main


def test_expected_texts_are_the_seeds() -> None:
    for code, path in SEEDS.items():
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            assert (lines[0], lines[1], lines[3]) == EXPECTED[code]
            assert [line.removeprefix("- ") for line in lines[-4:]] == SEED_TITLES[code]


def test_lesson_one_in_each_language(web: WebSession) -> None:
    for code, (title, summary, notice) in EXPECTED.items():
        page = web.client.get(f"/{code}{FIRST}").get_data(as_text=True)
        assert f'<html lang="{code}" dir="{"rtl" if code == "ar" else "ltr"}">' in page
        assert f"· {title} · Deep Learning Academy</title>" in page
        assert summary in page and 'id="not-translated"' not in page  # the card is translated: nothing to excuse
        exercise = web.client.get(f"/{code}/lessons/{LESSON}/amp-step").get_data(as_text=True)
        assert notice in exercise and '<div class="prose" lang="en" dir="ltr">' in exercise  # its prompt is English
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


def test_the_course_page_in_each_language(web: WebSession) -> None:
    """/it/, /ja/ and /ar/ list the four lessons by the seeds' titles, with the course's and each lesson's
    summary translated: nothing on the course page is left in English."""
    english = web.client.get("/en/").get_data(as_text=True)
    for code, titles in SEED_TITLES.items():
        page = web.client.get(f"/{code}/").get_data(as_text=True)
        shown = re.findall(r'<h2>[^<]*<a href="[^"]+">(.*?)</a></h2>\s*<p>(.*?)</p>', page)
        assert [title for title, _ in shown] == [str(escape(title)) for title in titles], code
        for _, summary in shown:
            assert summary and summary not in english, (code, summary)
        course_summary = re.search(r'<p class="summary">(.*?)</p>', page).group(1)
        assert course_summary and course_summary not in english
        assert 'lang="en"' not in _main(page)


def test_lesson_one_cards_in_each_language(web: WebSession) -> None:
    """Every card of lesson 1 shows its translation in Italian, Japanese and Arabic: the translated title and
    text, the code as it is, no English left and so no notice."""
    from academy.rendering import render_markdown
    from grader.core.course import Card, load_course

    cards = [step for step in load_course().lesson(LESSON).steps if isinstance(step, Card)]
    for code in SEED_TITLES:
        translated = translated_cards(code)
        assert len(translated) == len(cards) == 14, code
        by_id = {Card.default_id(name): text for name, text in translated.items()}  # lesson order is not file order
        for card in cards:
            title, markdown = by_id[card.id]
            page = web.client.get(f"/{code}/lessons/{LESSON}/{card.id}").get_data(as_text=True)
            assert f"<h1>{escape(title)}</h1>" in page and title != card.title, (code, card.id)
            assert render_markdown(markdown) in page, (code, card.id)
            assert render_markdown(card.markdown.split("\n\n")[0]) not in page, (code, card.id)  # no English
            assert 'id="not-translated"' not in page and 'lang="en"' not in _main(page)


def test_the_quiz_in_each_language_and_its_answers(make_app) -> None:  # noqa: ANN001
    """Lesson 1's quiz shows its questions, options and explanations translated; an answer is checked by the
    option's id as in English, and its verdict comes back in the page's language."""
    from academy.rendering import code_spans

    quiz_url = f"/lessons/{LESSON}/quiz"
    app = make_app()
    for code in SEED_TITLES:
        translation = yaml.safe_load((REPO / "exercises" / LESSON / f"quiz.{code}.yaml").read_text(encoding="utf-8"))
        web = WebSession(app.test_client()).guest()
        page = web.client.get(f"/{code}{quiz_url}").get_data(as_text=True)
        assert f"<h1>{escape(translation['title'])}</h1>" in page
        for question in translation["questions"]:  # code between `backticks` shown as code (issue 53)
            assert str(code_spans(question["question"])) in page, (code, question["id"])
            for option in question["options"].values():
                assert f">{code_spans(option['text'])}</button>" in page, (code, question["id"])
        assert "What tool fixes that?" not in page and 'lang="en"' not in _main(page)
        assert 'id="not-translated"' not in page
        right = web.post(f"/{code}/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"})
        assert right.status_code == 302 and right.location == f"/{code}{quiz_url}#q-vanishing-gradients"
        wrong = web.post(f"/{code}/lessons/{LESSON}/quiz/skipped-step", data={"option": "3"})
        assert wrong.status_code == 302
        page = web.client.get(f"/{code}{quiz_url}").get_data(as_text=True)
        questions = {q["id"]: q for q in translation["questions"]}
        for question_id, option_id, verdict in (("vanishing-gradients", "1", "right"), ("skipped-step", "3", "wrong")):
            explanation = code_spans(questions[question_id]["options"][option_id]["explanation"])
            shown = re.search(rf'<p class="verdict {verdict}"[^>]*id="verdict-{question_id}">(.*?)</p>', page, re.S)
            assert shown and str(explanation) in shown.group(1), (code, question_id)
        first_try = re.search(r'id="first-try">([^<]*)</p>', page).group(1)  # "1 of 4 right", in the language
        assert sorted(re.findall(r"\d+", first_try)) == ["1", "4", "6"] and "First try" not in first_try


def test_untranslated_text_is_marked_english(make_app, exercises_copy: Path) -> None:  # noqa: ANN001
    """What a translation leaves out is shown in English, inside lang="en" dir="ltr", and the lesson's page says
    so: a lesson's title on the course page, a card, a quiz question and an option's explanation."""
    (exercises_copy / "profiling" / "lesson.ja.yaml").unlink()
    (exercises_copy / LESSON / "cards" / "ja" / "02-why-half-precision-is-faster.md").unlink()
    quiz = exercises_copy / LESSON / "quiz.ja.yaml"
    data = yaml.safe_load(quiz.read_text(encoding="utf-8"))
    del data["questions"][0]["question"]
    del data["questions"][0]["options"]["4"]["explanation"]
    quiz.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    web = WebSession(make_app(EXERCISES_DIR=str(exercises_copy)).test_client()).guest()
    course = web.client.get("/ja/").get_data(as_text=True)
    assert f'{ENGLISH_MARK}Profiling the bottleneck</span></a>' in course
    assert f"<p>{ENGLISH_MARK}Measure where the time goes, then fix what matters</span></p>" in course
    card = web.client.get(f"/ja/lessons/{LESSON}/why-half-precision-is-faster").get_data(as_text=True)
    assert f"<h1>{ENGLISH_MARK}Why Half Precision Is Faster</span></h1>" in card
    assert '<div class="prose" lang="en" dir="ltr"><p>Modern GPUs' in card and 'id="not-translated"' in card
    web.post(f"/ja/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "4"})
    page = web.client.get(f"/ja/lessons/{LESSON}/quiz").get_data(as_text=True)
    assert f'{ENGLISH_MARK}You enabled autocast but tiny gradients keep vanishing.' in page
    assert f"{ENGLISH_MARK}No. The learning rate is applied after" in page and 'id="not-translated"' in page
    assert f">{escape(data['questions'][0]['options']['4']['text'])}</button>" in page  # the rest stays Japanese
    assert ENGLISH_MARK not in web.client.get(f"/en/lessons/{LESSON}/quiz").get_data(as_text=True)


MALFORMED = {
    "a question the English quiz lacks": (
        "mixed-precision/quiz.it.yaml", "questions:\n  - id: no-such-question\n    question: Perché?\n",
        "question 'no-such-question' is not a question of the English quiz"),
    "an option id the question lacks": (
        "mixed-precision/quiz.it.yaml",
        "questions:\n  - id: vanishing-gradients\n    options:\n      '9':\n        text: Nove\n",
        "option '9' is not one of its options (2, 1, 3, 4)"),
    "a misspelt key": ("gradient-accumulation/lesson.it.yaml", "title: Accumulo\nsumary: Riassunto\n",
                       "unknown key(s) sumary"),
    "a card with no English card of its name": ("profiling/cards/it/06-read-the-tabel.md", "# Tabella\n\nTesto.\n",
                                                "there is no English card cards/06-read-the-tabel.md"),
    "a card without its title line": ("mixed-precision/cards/ja/12-recap.md", "まとめ\n\n本文。\n",
                                      "a translated card starts with its '# Title' line"),
    "a check the exercise lacks": ("mixed-precision/amp-step/exercise.ar.yaml",
                                   "checks:\n  no-such-check:\n    title: x\n",
                                   "check 'no-such-check' is not one of the exercise's"),
    "not YAML": ("profiling/lesson.ja.yaml", "summary: [unclosed\n", "not valid YAML"),
    "a misspelt key in the course's file": ("course.ar.yaml", "title: x\ndescription: y\n",
                                            "unknown key(s) description"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_translation_file_is_named_with_its_problem(exercises_copy: Path, case: str) -> None:
    """Loading the course refuses a translation file that names what the English lacks, or is malformed,
    with the file and the problem, rather than showing English without saying why."""
    from academy import i18n
    from grader.core.course import CourseError, load_course

    relative, text, message = MALFORMED[case]
    path = exercises_copy / relative
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    load = i18n.load_course_translations if relative.startswith("course.") else i18n.load_translations
    with pytest.raises(CourseError) as error:
        load(load_course(exercises_copy))
    assert str(path) in str(error.value) and message in str(error.value)


def test_translation_files_and_instructor_coverage(make_app, exercises_copy: Path) -> None:  # noqa: ANN001
    lesson = exercises_copy / "gradient-accumulation"
    (lesson / "cards" / "it").mkdir()
    (lesson / "cards" / "it" / "01-what-gradient-accumulation-means.md").write_text(
        "# Cosa significa accumulare i gradienti\n\nSomma i gradienti di più micro-batch prima di uno step.\n")
    (lesson / "accumulate-amp" / "exercise.it.yaml").write_text(
        "title: Accumula con AMP\nprompt: Scrivi `train`.\n"
        "checks:\n  scaled-backward:\n    title: Backward sulla loss scalata\n")
    web = WebSession(make_app(EXERCISES_DIR=str(exercises_copy)).test_client())
    card = web.client.get("/it/lessons/gradient-accumulation/what-gradient-accumulation-means").get_data(as_text=True)
    assert "<h1>Cosa significa accumulare i gradienti</h1>" in card and "prima di uno step" in card
    exercise = web.client.get("/it/lessons/gradient-accumulation/accumulate-amp").get_data(as_text=True)
    assert "<h1>Accumula con AMP</h1>" in exercise
    assert "Backward sulla loss scalata" in exercise  # a check title, in the editor's data
    from academy.data.db import get_session
    from academy.data.models import User
    web.signup("teacher@example.org")
    with web.client.application.app_context():
        user = get_session().query(User).filter_by(email="teacher@example.org").one()
        user.role = "instructor"
        get_session().commit()
    overview = web.client.get("/instructor/").get_data(as_text=True)
    table = overview[overview.index('id="translations"'):]
    from grader.core.course import load_course

    course = load_course(exercises_copy)
    rows = {row.split("</td>", 1)[0]: row for row in table.split("<tr><td>")[1:]}
    lesson_two, lesson_one = course.lesson("gradient-accumulation"), course.lesson(LESSON)
    row = rows[f"{lesson_two.number}. {lesson_two.title}"]
    # title, summary, a card, two exercises (the test's accumulate-amp file and the course's fsdp2-accumulate)
    assert f'data-language="it">5 of {len(lesson_two.steps) + 2}</td>' in row
    assert f'data-language="ja">3 of {len(lesson_two.steps) + 2}</td>' in row  # title, summary, fsdp2-accumulate
    total = len(lesson_one.steps) + 2
    row = rows[f"{lesson_one.number}. {lesson_one.title}"]
    for code in SEED_TITLES:  # lesson 1: everything but its exercises, of which only fused-skip is translated
        assert f'data-language="{code}">{total - len(lesson_one.exercises) + 1} of {total}</td>' in row


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
    from academy.data.db import get_session
    from academy.web.auth import create_account

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
