"""A verdict stored by an older grader (schema 1) on the exercise page: the server sends it in today's shape
(grader.core.result.upgrade_result), and lesson.js draws it as it draws a new one, deriving nothing itself."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.paths import EXERCISE
from tests.support.results import schema_1_result

pytestmark = [pytest.mark.browser]


def test_a_schema_1_verdict_is_drawn_from_what_the_server_sends(page: Page, live_server: str,
                                                                live_instance: Path) -> None:
    from academy import create_app, jobs
    from academy.data.db import get_session
    from academy.data.models import Submission
    from academy.web.auth import create_account

    app = create_app({"INSTANCE_PATH": str(live_instance), "REQUEUE_ON_START": False})  # the server's database
    with app.app_context():
        user = create_account("schema-one@example.org", "password123")
        get_session().add(Submission(user=user, exercise_id=EXERCISE, code="x = 1\n", status="done",
                                     passed=False, result_json=json.dumps(schema_1_result())))
        get_session().commit()
    jobs.shutdown(app)
    app.extensions["academy.engine"].dispose()

    page.goto(f"{live_server}/auth/signin")
    page.get_by_label("Email").fill("schema-one@example.org")
    page.get_by_label("Password").fill("password123")
    page.locator("form.stack").get_by_role("button", name="Sign in").click()
    page.goto(f"{live_server}/lessons/mixed-precision/amp-step")
    expect(page.locator("#result-summary")).to_have_text("4 of 6 checks passed.")
    expect(page.locator("li.check.pass")).to_have_count(4)
    failing = page.locator('li.check.fail[data-check="scaled-backward"]')
    expect(failing).to_contain_text("backward() was called on the raw loss.")
    expect(failing.locator(".hint")).to_have_count(0)  # hints on request, as for a new verdict
    failing.get_by_role("button", name="Show a hint").click()
    expect(failing.locator(".hint")).to_contain_text("scaler.scale(loss).backward()")
    expect(page.locator("#result")).not_to_contain_text("Graded by the local sandbox")  # the grader's note
    expect(page.locator("#result")).to_contain_text(re.compile(r"Graded in 2\.5 s\.$"))  # no device "unknown"
