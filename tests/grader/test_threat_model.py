"""docs/threat-model.md and the exercise files say the same thing: one row per check of every exercise,
with the evidence its exercise.yaml declares; every check that rests on the learner's process says why."""
from grader.course import load_course
from tests.helpers import REPO


def table_rows() -> dict[tuple[str, str], str]:
    rows: dict[tuple[str, str], str] = {}
    for line in (REPO / "docs" / "threat-model.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and len(cells) == 8 and "/" in cells[0] and cells[0] != "exercise":
            assert (cells[0], cells[1]) not in rows, f"two rows for {cells[0]} {cells[1]}"
            rows[(cells[0], cells[1])] = cells[2]
    return rows


def test_every_check_has_one_row_with_the_evidence_its_exercise_declares():
    declared = {(exercise.id, check.id): check.evidence
                for exercise in load_course().exercises.values() for check in exercise.checks}
    assert table_rows() == declared


def test_checks_resting_on_the_learners_process_say_why():
    for exercise in load_course().exercises.values():
        for check in exercise.checks:
            assert check.evidence in ("outside", "learner")
            assert check.evidence == "outside" or len(check.evidence_why) > 40, (exercise.id, check.id)
