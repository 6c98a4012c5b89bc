"""The course's files are read against JSON Schemas (grader/core/schemas/), by one loader (grader.core): every
file of the course and its translations is valid, a mistake is told with the file, where in it and what was
expected, the docs' key tables are the schemas', and the schemas' kinds of step are the loader's."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from grader.core import coursefiles, jsonschemas, schemas_doc
from grader.core.course import STEP_KINDS, CourseError, load_course
from grader.core.settings import EXERCISE_MEMORY_MB, EXERCISE_TIME_S
from grader.core.steps import CardText, ExerciseText, QuizText
from grader.core.translations import load_course_translations, load_translations
from tests.support.paths import EXERCISES, REPO

LANGUAGES = ("it", "ja", "ar")


def _schema_of(path: Path) -> str:
    """exercise.it.yaml -> "exercise.translation", lesson.yaml -> "lesson"."""
    parts = path.name.split(".")
    return parts[0] if len(parts) == 2 else f"{parts[0]}.translation"


def test_every_schema_is_a_valid_json_schema() -> None:
    """jsonschemas.py no longer checks a schema when it makes its validator (30 ms of a course load): here."""
    for path in sorted(jsonschemas.FOLDER.glob("*.json")):
        schema = json.loads(path.read_text())
        jsonschema.validators.validator_for(schema).check_schema(schema)


def test_every_course_file_and_translation_is_valid() -> None:
    files = [path for path in EXERCISES.rglob("*.yaml")
             if path.name.split(".")[0] in ("course", "lesson", "quiz", "exercise") and "checks" not in path.parts]
    assert len(files) >= 40 and {_schema_of(path) for path in files} == set(schemas_doc.FILES)
    for path in files:
        assert coursefiles.read(path, _schema_of(path)) is not None, path
    course = load_course(EXERCISES)
    texts = load_translations(course, LANGUAGES)
    assert all(heading.title for heading in load_course_translations(course, LANGUAGES).values())
    kinds = {type(text) for lesson_text in texts.values() for text in lesson_text.steps.values()}
    assert kinds == {CardText, QuizText, ExerciseText}  # each kind of step read its own translation file


def test_the_docs_key_tables_are_the_schemas() -> None:
    docs = (REPO / "docs" / "authoring.md").read_text(encoding="utf-8")
    marked = {m.group("name"): m.group("table").strip() for m in schemas_doc.MARKED.finditer(docs)}
    assert set(marked) == set(schemas_doc.FILES)
    for name, table in marked.items():
        assert table == schemas_doc.table(name), \
            f"docs/authoring.md's {name} key table is stale: run `python -m grader.core.schemas_doc --write`"


def test_every_key_says_what_it_means() -> None:
    def keys(schema: dict, where: str):
        for key, sub in schema.get("properties", {}).items():
            yield f"{where}{key}", sub
            yield from keys(sub, f"{where}{key}.")
            for inner in (sub.get("items"), sub.get("additionalProperties")):
                if isinstance(inner, dict):
                    yield from keys(inner, f"{where}{key}[].")

    for name in schemas_doc.FILES:
        for key, sub in keys(jsonschemas.schema(name), ""):
            assert sub.get("description"), (name, key)


def test_the_schemas_defaults_are_the_graders() -> None:
    limits = jsonschemas.schema("exercise")["properties"]["limits"]["properties"]
    assert (limits["time_s"]["default"], limits["memory_mb"]["default"]) == (EXERCISE_TIME_S, EXERCISE_MEMORY_MB)


def test_the_step_kinds_are_the_registrys() -> None:
    """lesson.yaml's step keys (but `id`) are exactly the registry's kinds, one class each."""
    step = jsonschemas.schema("lesson")["properties"]["steps"]["items"]
    assert set(step["properties"]) - {"id"} == set(STEP_KINDS)
    assert len(set(STEP_KINDS.values())) == len(STEP_KINDS)
    assert all(cls.__dataclass_fields__["kind"].default == kind for kind, cls in STEP_KINDS.items())


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A course of one lesson: a card, an exercise, a quiz."""
    root = tmp_path / "exercises"
    shutil.copytree(EXERCISES / "mixed-precision" / "amp-step", root / "one" / "amp-step")
    (root / "course.yaml").write_text("title: T\nlessons: [one]\n")
    (root / "one" / "cards").mkdir()
    (root / "one" / "cards" / "01-a.md").write_text("# A card\n\nText.\n")
    (root / "one" / "lesson.yaml").write_text("title: L\nsteps:\n  - card: 01-a.md\n  - exercise: amp-step\n"
                                              "  - quiz: quiz.yaml\n")
    (root / "one" / "quiz.yaml").write_text("questions:\n  - id: why\n    question: Why?\n    options:\n"
                                            "      - {text: a, correct: true, explanation: e}\n"
                                            "      - {text: b, explanation: f}\n")
    return root


# (file, replace this, with this, what the message says besides the file)
MISTAKES = {
    "an unknown key": ("one/lesson.yaml", "title: L", "title: L\nsumary: S",
                       "unknown key(s) sumary (the keys here: steps, summary, title)"),
    "an unknown key in a check": ("one/amp-step/exercise.yaml", "    evidence: outside\n",
                                  "    evidence: outside\n    weight: 2\n", "check 'runs': unknown key(s) weight"),
    "a wrong type": ("one/amp-step/exercise.yaml", "title: ", "gpu: yes please\ntitle: ",
                     "'gpu' must be true or false (found 'yes please')"),
    "a wrong type, nested": ("one/amp-step/exercise.yaml", "  time_s: 10\n", "  time_s: soon\n",
                             "'limits.time_s' must be a number (found 'soon')"),
    "a wrong value in a list item": ("one/amp-step/exercise.yaml", "evidence: outside", "evidence: trust-me",
                                     "check 'runs': evidence must be one of outside, learner (found 'trust-me')"),
    "a missing required key": ("one/quiz.yaml", "explanation: f", "correct: false",
                               "question 'why', option 2: missing required key 'explanation'"),
    "a missing required key in the course": ("course.yaml", "title: T\n", "", "missing required key 'title'"),
    "a bad step kind": ("one/lesson.yaml", "- quiz: quiz.yaml", "- video: intro.mp4",
                        "step 3: unknown step kind 'video'"),
    "a bad step id": ("one/lesson.yaml", "- quiz: quiz.yaml", "- quiz: quiz.yaml\n    id: Quick Check",
                      "step 'Quick Check': step id 'Quick Check' must be lower-case-with-dashes"),
    "a translation's unknown key": ("one/lesson.ja.yaml", None, "title: L\ndescription: D\n",
                                    "unknown key(s) description (the keys here: summary, title)"),
    "a translation's wrong type": ("one/amp-step/exercise.it.yaml", None, "checks:\n  runs: Funziona\n",
                                   "check 'runs' must be a mapping of keys (found 'Funziona')"),
    "a translated option's unknown key": ("one/quiz.ar.yaml", None,
                                          "questions:\n  - id: why\n    options:\n      1: {txt: x}\n",
                                          "question 'why', option '1': unknown key(s) txt"),
}


@pytest.mark.parametrize("case", MISTAKES)
def test_a_mistake_is_told_with_its_file_its_place_and_what_was_expected(course: Path, case: str) -> None:
    relative, old, new, message = MISTAKES[case]
    path = course / relative
    if old is None:
        path.write_text(new)
    else:
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new, 1))
    with pytest.raises(CourseError) as error:
        load_translations(load_course(course), LANGUAGES)
    assert str(error.value).startswith(f"{path}: "), error.value
    assert message in str(error.value), error.value


def test_defaults_come_from_the_schema(course: Path) -> None:
    lesson = load_course(course).lesson("one")
    exercise = lesson.exercises[0]
    assert lesson.summary == "" and lesson.quiz is not None and lesson.quiz.title == "Quick Check"
    assert [o.id for o in lesson.quiz.questions[0].options] == ["1", "2"]
    assert not any(o.pinned for o in lesson.quiz.questions[0].options)
    assert exercise.solution_after is None and all(not c.outcome or c.evidence == "outside" for c in exercise.checks)
