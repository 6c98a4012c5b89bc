"""The instructor's per-exercise summary of what learners ask the tutor: most asked first, without names."""
from __future__ import annotations

from academy.data.accounts import create_account
from academy.data.db import get_session
from academy.tutor import store
from tests.support.apps import WebSession
from tests.support.tutor import LESSON, STEP

EXERCISE = f"{LESSON}/{STEP}"


def test_the_summary_counts_questions_and_learners_without_names(make_tutor_app) -> None:  # noqa: ANN001
    app = make_tutor_app()
    with app.app_context():
        learners = [create_account(f"learner{n}@example.org", "password123") for n in range(3)]
        create_account("teacher@example.org", "password123", role="instructor")
        get_session().commit()
        asked = [(0, "Why is my scale 32768 after step 3?"), (1, "why is my scale 32768 after step 3"),
                 (2, "Why is my scale 32768 after step 3?"), (2, "What does unscale_ do?")]
        for who, text in asked:
            store.add(learners[who].id, LESSON, STEP, EXERCISE, "learner", text)
        store.add(learners[0].id, LESSON, "what-mixed-precision-means", None, "learner", "Not this exercise")
    learner = WebSession(app.test_client())
    learner.signin("learner0@example.org")
    assert learner.client.get(f"/instructor/tutor/{EXERCISE}").status_code == 403
    teacher = WebSession(app.test_client())
    teacher.signin("teacher@example.org")
    assert f'href="/instructor/tutor/{EXERCISE}"' in teacher.client.get(f"/instructor/exercises/{EXERCISE}") \
        .get_data(as_text=True)
    page = teacher.client.get(f"/instructor/tutor/{EXERCISE}").get_data(as_text=True)
    assert "4 questions from 3 learners" in page
    rows = page.split('id="tutor-top"', 1)[1].split("</tbody>", 1)[0]
    assert rows.index("Why is my scale 32768 after step 3?</td><td>3</td><td>3</td>") < \
        rows.index("What does unscale_ do?</td><td>1</td><td>1</td>")
    assert "Not this exercise" not in page
    assert "learner0" not in page and "example.org" not in page.split("<main>", 1)[1].replace("teacher@example.org", "")
