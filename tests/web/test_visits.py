"""Which step visits count (academy/web/lessons.py, security.from_this_site): only those the learner made. Another
site's link opens a step page with the learner's session cookie (SameSite=Lax goes with top-level GETs) and
records nothing; a visitor's reading is kept only by the account that visitor becomes (a sign-up, a guest), not
by whoever signs in next on that browser."""
from __future__ import annotations

from flask import Flask
from sqlalchemy import select

from academy.data.db import get_session
from academy.data.models import LessonProgress, StepVisit, User
from tests.support.apps import WebSession, new_session
from tests.support.paths import LESSON

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
OWN_PAGE = {"User-Agent": BROWSER, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"}


def _steps(app: Flask, email: str | None = None) -> set[str]:
    with app.app_context():
        db = get_session()
        user_id = db.scalar(select(User.id).where(User.email == email) if email else
                            select(User.id).where(User.is_guest.is_(True)))
        return set(db.scalars(select(StepVisit.step_id).where(StepVisit.user_id == user_id)))


def _resume(app: Flask, email: str) -> str | None:
    with app.app_context():
        db = get_session()
        user_id = db.scalar(select(User.id).where(User.email == email))
        return db.scalar(select(LessonProgress.step_id).where(LessonProgress.user_id == user_id))


FOREIGN = {
    "cross-site": {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},  # a link on another site
    "same-site": {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate"},  # a sibling host (subdomain)
    "old browser, foreign referrer": {"Referer": "https://elsewhere.example/page"},  # no Fetch Metadata
    "old browser, no referrer": {},  # no Fetch Metadata, the referrer suppressed (rel="noreferrer")
}
OWN = {
    "same-origin": OWN_PAGE,  # a link on one of the site's pages
    "typed": {"User-Agent": BROWSER, "Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"},  # or a bookmark
    "old browser, own referrer": {"User-Agent": BROWSER, "Referer": "http://localhost/lessons/"},
    "script": {"User-Agent": "python-requests/2.32"},  # the learner's own cookie: no other site drives it
}


def test_another_sites_link_shows_the_step_and_records_nothing(app) -> None:  # noqa: ANN001
    ada = new_session(app)
    ada.signup("ada@example.org")
    ada.client.get(f"/lessons/{LESSON}/what-mixed-precision-means", headers=OWN_PAGE)
    for how, headers in FOREIGN.items():
        for step in ("meet-autocast", "the-catch-with-16-bit"):
            page = ada.client.get(f"/lessons/{LESSON}/{step}", headers={"User-Agent": BROWSER, **headers})
            assert page.status_code == 200 and "Step " in page.get_data(as_text=True), how  # it still renders
        # A numbered URL's redirect is the same navigation: still another site's.
        ada.client.get(f"/lessons/{LESSON}/7", headers={"User-Agent": BROWSER, **headers}, follow_redirects=True)
        assert _steps(app, "ada@example.org") == {"what-mixed-precision-means"}, how
        assert _resume(app, "ada@example.org") == "what-mixed-precision-means", how
    # A visitor's browser is not marked by another site either: signing up adopts only what it opened itself.
    visitor = new_session(app)
    for headers in FOREIGN.values():
        visitor.client.get(f"/lessons/{LESSON}/meet-autocast", headers={"User-Agent": BROWSER, **headers})
    visitor.client.get(f"/lessons/{LESSON}/what-autocast-wraps", headers=OWN_PAGE)
    visitor.signup("grace@example.org")
    assert _steps(app, "grace@example.org") == {"what-autocast-wraps"}


def test_the_learners_own_navigation_records_the_visit(app) -> None:  # noqa: ANN001
    ada = new_session(app)
    ada.signup("ada@example.org")
    steps = ["meet-autocast", "the-catch-with-16-bit", "what-autocast-wraps", "what-mixed-precision-means"]
    for (how, headers), step in zip(OWN.items(), steps):
        assert ada.client.get(f"/lessons/{LESSON}/{step}", headers=headers).status_code == 200
        assert step in _steps(app, "ada@example.org"), how
        assert _resume(app, "ada@example.org") == step, how


def test_a_visitors_reading_is_not_added_to_whoever_signs_in_next(app) -> None:  # noqa: ANN001
    """A shared computer: a visitor reads two cards; then Ada signs in on that browser. Nothing the visitor
    read is Ada's, and her resume point stays hers."""
    ada = new_session(app)
    ada.signup("ada@example.org")
    ada.client.get(f"/lessons/{LESSON}/what-mixed-precision-means", headers=OWN_PAGE)
    ada.post("/auth/signout")

    shared = new_session(app)
    for step in ("meet-autocast", "the-catch-with-16-bit"):
        shared.client.get(f"/lessons/{LESSON}/{step}", headers=OWN_PAGE)
    assert "2 of 21 steps done" in shared.client.get("/").get_data(as_text=True)  # the visitor's own view
    assert shared.signin("ada@example.org").status_code == 302
    assert _steps(app, "ada@example.org") == {"what-mixed-precision-means"}
    assert _resume(app, "ada@example.org") == "what-mixed-precision-means"
    assert "1 of 21 steps done" in shared.client.get("/").get_data(as_text=True)
    # Signed out again, the browser does not hold the visitor's reading any more either.
    shared.post("/auth/signout")
    assert "0 of 21 steps done" in shared.client.get("/").get_data(as_text=True)


def test_a_visitor_who_signs_up_or_becomes_a_guest_keeps_what_they_read(app) -> None:  # noqa: ANN001
    grace = new_session(app)
    grace.client.get(f"/lessons/{LESSON}/meet-autocast", headers=OWN_PAGE)
    grace.signup("grace@example.org")
    assert _steps(app, "grace@example.org") == {"meet-autocast"}
    guest = WebSession(app.test_client())
    guest.client.get(f"/lessons/{LESSON}/the-catch-with-16-bit", headers=OWN_PAGE)
    guest.post(f"/lessons/{LESSON}/quiz/vanishing-gradients", data={"option": "1"})  # a first answer: a guest
    assert _steps(app) == {"the-catch-with-16-bit"}
