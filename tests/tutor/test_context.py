"""What the tutor is shown (academy/tutor/context.py) for a learner who has not passed: their code, Run and
verdict, the hints they opened; never the solution, an unopened hint or the checks' code."""
from __future__ import annotations

import re
from pathlib import Path

from academy.content import get_content
from academy.data.models import User
from academy.tutor.context import build_context
from tests.support.apps import ready_app
from tests.support.paths import EXERCISES
from tests.support.tutor import LESSON, RAW_BACKWARD, STEP, copy_graded

SOLUTION = (EXERCISES / LESSON / STEP / "solution.py").read_text()


def _context(graded: Path, tmp_path: Path, step_id: str = STEP):  # noqa: ANN202
    folder, _cookie = copy_graded(graded, tmp_path / "instance")
    app = ready_app({"INSTANCE_PATH": str(folder), "SANDBOX": "local", "SECRET_KEY": "test", "TESTING": True,
                     "REQUEUE_ON_START": False})
    with app.test_request_context():
        from academy.data.db import get_session

        learner = get_session().query(User).filter(User.is_guest.is_(True)).one()
        lesson = get_content().lesson(LESSON)
        return build_context(learner, lesson, lesson.step(step_id), RAW_BACKWARD, "why does it fail?"), lesson


def test_an_unsolved_learner_s_context_has_their_evidence_and_nothing_of_the_solution(graded: Path,
                                                                                     tmp_path: Path) -> None:
    context, lesson = _context(graded, tmp_path)
    evidence = context.evidence
    # What the learner's page shows: their own numbered line, the failed check and its message, the opened hint.
    assert " 11|     loss.backward()" in evidence
    assert "check 'scaled-backward' (Backward runs on the scaled loss): failed (the learner's line 11)" in evidence
    exercise = lesson.step(STEP).exercise
    opened = next(c for c in exercise.checks if c.id == "scaled-backward").hints[0]
    assert opened in evidence
    # Never: the worked solution (its docstring, its body as a whole), the hints not opened, the checks' code.
    assert '"""One mixed-precision training iteration' not in evidence
    body = "\n".join(line.strip() for line in SOLUTION.splitlines()[5:12])
    assert body not in "\n".join(line.strip() for line in evidence.splitlines())
    unopened = [hint for check in exercise.checks for hint in check.hints if hint != opened]
    assert unopened and not [hint for hint in unopened if hint in evidence]
    assert context.forbidden_hints == unopened and context.forbidden_code == SOLUTION
    for checks_file in (EXERCISES / LESSON / STEP / "checks").glob("*.py"):
        distinctive = [line.strip() for line in checks_file.read_text().splitlines() if len(line.strip()) > 40]
        assert not [line for line in distinctive if line in evidence], checks_file.name
    # Its sources: the card it chose, the failed check, the learner's line.
    kinds = {(s.kind, s.title) for s in context.sources}
    assert ("check", "Backward runs on the scaled loss") in kinds and ("line", "your line 11") in kinds
    assert any(kind == "card" for kind, _ in kinds)


def test_a_card_step_s_context_is_that_card(graded: Path, tmp_path: Path) -> None:
    context, lesson = _context(graded, tmp_path, "what-mixed-precision-means")
    card = lesson.step("what-mixed-precision-means")
    assert card.markdown.strip()[:200] in context.evidence
    assert "LEARNER'S CURRENT CODE" not in context.evidence and not re.search(r"zero_grad\(\)", context.evidence)
    assert [(s.kind, s.url) for s in context.sources] == [("card", f"/lessons/{LESSON}/what-mixed-precision-means")]
