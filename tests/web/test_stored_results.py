"""Results stored by an older grader reach every reader in today's shape: through grader.core.result.upgrade_result
on the server (academy.data.models.stored_result), never upgraded by the API's views or by lesson.js. The page's
side of this: tests/browser/test_stored_results.py."""
from __future__ import annotations

import json
import re

from academy.data.db import get_session
from academy.data.models import Submission, User
from tests.support.apps import new_session
from tests.support.paths import EXERCISE
from tests.support.results import schema_1_result


def test_a_schema_1_result_comes_out_of_every_api_path_in_todays_shape(app) -> None:  # noqa: ANN001
    web = new_session(app)
    web.signup("old@example.org")
    with app.app_context():
        db = get_session()
        user = db.query(User).filter_by(email="old@example.org").one()
        db.add(Submission(user_id=user.id, exercise_id=EXERCISE, code="x = 1\n", status="done", passed=False,
                          result_json=json.dumps(schema_1_result())))
        db.commit()
    one = web.api("GET", "/api/submissions/1").json["result"]
    listed = web.api("GET", f"/api/submissions?exercise={EXERCISE}").json["submissions"][0]["result"]
    for result in (one, listed):
        assert result["schema_version"] == 2
        assert [check["status"] for check in result["checks"]] == ["passed", "passed", "failed", "passed", "failed",
                                                                   "passed"]
        assert all("because" in check for check in result["checks"])
        assert result["device"] is None  # "unknown" was a device nothing reached
        assert result["notes"] == [] and "grader_notes" not in result  # the sandbox's words stay with instructors
        failed = result["checks"][2]
        assert failed["message"] == "backward() was called on the raw loss." and failed["line"] == 4
        assert (failed["hints"], failed["hints_total"], failed["hint"]) == ([], 1, "")  # on request only
    revealed = web.api("POST", "/api/submissions/1/hints", {"check": "scaled-backward"}).json
    assert revealed == {"check": "scaled-backward", "hints": ["Call scaler.scale(loss).backward()."],
                        "hints_total": 1}
    page = web.client.get("/lessons/mixed-precision/amp-step").get_data(as_text=True)
    editor = json.loads(re.search(r'<script type="application/json" id="exercise-data">(.*?)</script>', page,
                                  re.S).group(1))
    assert editor["latest"] == 1  # the page shows what /api/submissions/1 sends (lesson.js upgrades nothing)
