"""docs/threat-model.md and the exercise files say the same thing: one row per check of every exercise,
with the evidence its exercise.yaml declares; every check that rests on the learner's process says why.
And the threat model is executable (issue 26): every row that claims `outside` names the test that attacks
it, and every test the document names exists."""
import re

from grader.core.course import load_course
from tests.support.paths import REPO

DOC = REPO / "docs" / "threat-model.md"
TEST_REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")
FORGER = 6  # the column "what a forger must do"


def table_cells() -> dict[tuple[str, str], list[str]]:
    rows: dict[tuple[str, str], list[str]] = {}
    for line in DOC.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and len(cells) == 8 and "/" in cells[0] and cells[0] != "exercise":
            assert (cells[0], cells[1]) not in rows, f"two rows for {cells[0]} {cells[1]}"
            rows[(cells[0], cells[1])] = cells
    return rows


def table_rows() -> dict[tuple[str, str], str]:
    return {key: cells[2] for key, cells in table_cells().items()}


def test_every_check_has_one_row_with_the_evidence_its_exercise_declares():
    declared = {(exercise.id, check.id): check.evidence
                for exercise in load_course().exercises.values() for check in exercise.checks}
    assert table_rows() == declared


def test_checks_resting_on_the_learners_process_say_why():
    for exercise in load_course().exercises.values():
        for check in exercise.checks:
            assert check.evidence in ("outside", "learner")
            assert check.evidence == "outside" or len(check.evidence_why) > 40, (exercise.id, check.id)


def test_every_row_claiming_outside_names_the_test_that_attacks_it():
    unnamed = [key for key, cells in table_cells().items()
               if cells[2] == "outside" and not TEST_REFERENCE.search(cells[FORGER])]
    assert not unnamed, f"outside rows whose 'what a forger must do' names no test: {unnamed}"


def test_every_test_the_threat_model_names_exists():
    named = TEST_REFERENCE.findall(DOC.read_text())
    assert named
    missing = [f"{path}::{name}" for path, name in sorted(set(named))
               if not (REPO / path).is_file() or not re.search(rf"^def {name}\(", (REPO / path).read_text(), re.M)]
    assert not missing, f"docs/threat-model.md names tests that do not exist: {missing}"
