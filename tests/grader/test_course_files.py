"""The course loads from files, lesson 1 carries the seed page, and malformed files get clear errors."""
from pathlib import Path

import pytest

from grader.core.course import Card, CourseError, ExerciseStep, Quiz, load_course
from tests.support.paths import EXERCISES

SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seeds"
SEED_CARD_TITLES = [
    "What Mixed Precision Means", "Why Half Precision Is Faster", "The Catch With 16-Bit", "Meet autocast",
    "What autocast Wraps", "Meet GradScaler", "Scale the Loss", "Step Through the Scaler",
    "Update the Scale Factor", "The Full AMP Step", "When To Reach For It", "Recap",
]


SEED_CARD_FILES = sorted(p.name for p in (EXERCISES / "mixed-precision" / "cards").glob("[01][0-9]-*.md"))[:12]


def seed_cards(lesson) -> list[Card]:
    """Lesson 1's cards 01-12, the seed page's; the cards the course adds (13 on) are its own, not the seed's."""
    ids = {Card.default_id(name) for name in SEED_CARD_FILES}
    return [s for s in lesson.steps if isinstance(s, Card) and s.id in ids]


def test_lesson_one_carries_every_seed_card_in_order():
    lesson = load_course().lesson("mixed-precision")
    cards = [s.title for s in seed_cards(lesson)]
    assert cards == SEED_CARD_TITLES
    assert lesson.title == "Mixed precision with autocast and GradScaler"
    kinds = [s.kind for s in lesson.steps]
    # The exercises follow the full AMP step; the quick check comes before the recap.
    assert kinds.index("exercise") > cards.index("The Full AMP Step")
    assert kinds[-2:] == ["quiz", "card"]


NOTE = "> **Note:** "


def _original_part(markdown: str) -> str:
    """The card without the notes this course adds to the original lesson's words (issue 19, item 11):
    each note is a blockquote starting "> **Note:** ", with any code of its own after it."""
    return markdown.split("\n\n" + NOTE)[0]


@pytest.mark.skipif(not SEEDS.is_dir(), reason="shared/seeds is not beside the repository")
def test_card_text_and_code_match_the_seed():
    seed = next(SEEDS.glob("000_*.txt")).read_text(encoding="utf-8")
    lesson = load_course().lesson("mixed-precision")
    for card in seed_cards(lesson):
        original = _original_part(card.markdown)
        prose = original.split("```")[0].replace("`", "").strip()
        assert prose.rstrip(" ⚡") in seed.replace("\n", " ") or prose in seed, card.title
        if "```python" in original:
            code = original.split("```python\n")[1].split("```")[0]
            for line in code.strip().splitlines():
                assert line.strip() in seed, (card.title, line)


def test_lesson_one_notes_correct_the_original_where_it_misleads_today():
    """The original words stay; short notes after them say what changed or what they leave out."""
    cards = {s.title: s.markdown for s in load_course().lesson("mixed-precision").steps if isinstance(s, Card)}
    notes = {title: markdown.split(NOTE, 1)[1] for title, markdown in cards.items() if NOTE in markdown}
    assert "stay float32" in notes["What Mixed Precision Means"]
    assert ".float()" in notes["Meet autocast"]
    assert "torch.amp.GradScaler('cuda')" in notes["Meet GradScaler"]
    assert "skips `optimizer.step()`" in notes["Step Through the Scaler"]
    assert all(word in notes["Update the Scale Factor"] for word in ("65536", "2000", "halves"))
    assert "AMX" in notes["When To Reach For It"]


def test_quick_check_comes_from_the_seed_with_one_right_answer():
    quiz = load_course().lesson("mixed-precision").quiz
    assert isinstance(quiz, Quiz)
    question = quiz.questions[0]
    assert question.question == "You enabled autocast but tiny gradients keep vanishing. What tool fixes that?"
    assert question.options[question.answer].text == "A GradScaler"
    assert all(option.explanation for option in question.options)


def test_lesson_one_exercises_declare_the_required_checks():
    course = load_course()
    amp_step = course.exercises["mixed-precision/amp-step"]
    fix = course.exercises["mixed-precision/fix-underflow"]
    assert {"autocast-scope", "scaled-backward", "step-update-order"} <= {c.id for c in amp_step.checks}
    assert "underflow-fixed" in {c.id for c in fix.checks}
    assert amp_step.params == ("model", "optimizer", "scaler", "loss_fn", "x", "y")
    assert len(amp_step.mistakes()) + len(fix.mistakes()) >= 8
    covered = set().union(*(m.expect_fail | (m.expect_skip or frozenset()) for ex in (amp_step, fix)
                            for m in ex.mistakes()))
    assert {"autocast-scope", "scaled-backward", "step-update-order", "underflow-fixed"} <= covered


def _course(tmp_path: Path, lesson_yaml: str, exercise_yaml: str | None = None) -> Path:
    (tmp_path / "course.yaml").write_text("title: T\nlessons: [one]\n")
    lesson = tmp_path / "one"
    (lesson / "cards").mkdir(parents=True)
    (lesson / "cards" / "a.md").write_text("# A card\n\nText.\n")
    (lesson / "lesson.yaml").write_text(lesson_yaml)
    (lesson / "quiz.yaml").write_text("questions:\n  - question: Q?\n    options:\n      - {text: a, correct: true, "
                                      "explanation: e, id: Not An Id}\n")
    if exercise_yaml is not None:
        ex = lesson / "ex"
        (ex / "checks").mkdir(parents=True)
        (ex / "exercise.yaml").write_text(exercise_yaml)
        (ex / "starter.py").write_text("")
        (ex / "solution.py").write_text("")
        (ex / "checks" / "test_x.py").write_text("")
    return tmp_path


@pytest.mark.parametrize("lesson_yaml, exercise_yaml, expected", [
    ("title: L\nsteps:\n  - card: missing.md\n", None, "card file is missing"),
    ("title: L\nsteps:\n  - video: a.md\n", None, "unknown step kind 'video'"),
    ("steps:\n  - card: a.md\n", None, "missing required key 'title'"),
    ("title: L\nsteps: [\n", None, "not valid YAML"),
    ("title: L\nsteps:\n  - exercise: ex\n", "title: X\nentry: f\nchecks:\n  - id: Bad Id\n    title: t\n    hint: h\n",
     "must be lower-case-with-dashes"),
    ("title: L\nsteps:\n  - exercise: ex\n", "title: X\nchecks: []\n", "missing required key 'entry'"),
    ("title: L\nsteps:\n  - exercise: ex\n", "title: X\nentry: f\nchecks:\n  - id: runs\n    title: t\n    hint: h\n",
     "missing required key 'evidence'"),
    ("title: L\nsteps:\n  - exercise: ex\n",
     "title: X\nentry: f\nchecks:\n  - id: runs\n    title: t\n    hint: h\n    evidence: trust-me\n",
     "evidence must be one of outside, learner"),
    ("title: L\nsteps:\n  - exercise: ex\n",
     "title: X\nentry: f\nchecks:\n  - id: runs\n    title: t\n    hint: h\n    evidence: learner\n",
     "say why that is acceptable in 'evidence_why'"),
    ("title: L\nsteps:\n  - exercise: ex\n",
     "title: X\nentry: f\nchecks:\n  - id: runs\n    title: t\n    hint: h\n    hints: [h2]\n    evidence: outside\n",
     "needs 'hints: \\[...\\]' or one 'hint:'"),
    ("title: L\nsteps:\n  - exercise: ex\n",
     "title: X\nentry: f\nchecks:\n  - id: runs\n    title: t\n    hints: []\n    evidence: outside\n",
     "'hints' must be a list of one or more texts"),
    ("title: L\nsteps:\n  - exercise: ex\n",
     "title: X\nentry: f\nsolution_after: 0\nchecks:\n  - id: runs\n    title: t\n    hint: h\n    evidence: outside\n",
     "'solution_after' must be a number of submissions"),
    ("title: L\nsteps:\n  - card: a.md\n    id: end\n", None, "is the lesson's end page"),
    ("title: L\nsteps:\n  - quiz: quiz.yaml\n", None, "option id 'Not An Id'"),
])
def test_malformed_course_files_name_the_file_and_the_problem(tmp_path, lesson_yaml, exercise_yaml, expected):
    root = _course(tmp_path, lesson_yaml, exercise_yaml)
    with pytest.raises(CourseError, match=expected) as err:
        load_course(root)
    assert str(root) in str(err.value)


def test_mistake_without_expectation_is_rejected(tmp_path):
    root = _course(tmp_path, "title: L\nsteps:\n  - exercise: ex\n",
                   "title: X\nentry: f\nchecks:\n  - id: runs\n    title: t\n    hint: h\n    evidence: outside\n")
    (root / "one" / "ex" / "mistakes").mkdir()
    (root / "one" / "ex" / "mistakes" / "m.py").write_text("def f(): pass\n")
    exercise = load_course(root).exercises["one/ex"]
    with pytest.raises(CourseError, match="expect-fail"):
        exercise.mistakes()
    (root / "one" / "ex" / "mistakes" / "m.py").write_text("# expect-fail: nope\n")
    with pytest.raises(CourseError, match="unknown checks"):
        exercise.mistakes()
    # may-pass only relaxes what is declared, and a mistake must always fail something
    (root / "one" / "ex" / "mistakes" / "m.py").write_text("# expect-fail: runs\n# may-pass: nope\n")
    with pytest.raises(CourseError, match="unknown checks"):
        exercise.mistakes()
    (root / "one" / "ex" / "mistakes" / "m.py").write_text("# expect-fail: runs\n# may-pass: runs\n")
    with pytest.raises(CourseError, match="must always fail one"):
        exercise.mistakes()


def test_an_exercise_is_found_by_id_or_by_folder():
    course = load_course()
    by_id = course.find_exercise("mixed-precision/amp-step")
    assert course.find_exercise(str(by_id.path)) is by_id
    with pytest.raises(KeyError, match="unknown exercise"):
        course.find_exercise("mixed-precision/nope")
    assert isinstance(next(s for s in course.lesson("mixed-precision").steps if s.kind == "exercise"), ExerciseStep)


def test_hints_list_solution_after_and_quiz_option_ids(tmp_path):
    root = _course(tmp_path, "title: L\nsteps:\n  - exercise: ex\n  - quiz: q.yaml\n",
                   "title: X\nentry: f\nsolution_after: 3\nchecks:\n  - id: runs\n    title: t\n    hints: [one, two]\n"
                   "    evidence: outside\n")
    (root / "one" / "q.yaml").write_text(
        "questions:\n  - id: q\n    question: Q?\n    options:\n"
        "      - {text: a, explanation: e}\n      - {text: b, correct: true, explanation: e, id: right}\n"
        "      - {text: all of the above, explanation: e, pin: true}\n")
    lesson = load_course(root).lessons[0]
    exercise = lesson.exercises[0]
    assert exercise.checks[0].hints == ("one", "two") and exercise.checks[0].hint == "one"
    assert exercise.solution_after == 3
    question = lesson.quiz.questions[0]
    assert [o.id for o in question.options] == ["1", "right", "3"] and question.answer_id == "right"
    assert all(question.shuffled(str(salt))[2].pinned for salt in range(10))


def test_every_exercise_has_an_example_that_matches_its_parameters():
    """example.py builds one call's arguments (what Run calls the learner's function with)."""
    from grader.learner.entry import load_example

    for exercise in load_course(EXERCISES).exercises.values():
        args = load_example(exercise.path).example("cpu")
        assert isinstance(args, tuple) and len(args) == len(exercise.params), exercise.id


def test_the_fast_yaml_reader_reads_every_course_file_as_the_safe_loader_does():
    """grader.core.exercise.parse_yaml reads with libyaml where PyYAML has it: every YAML file of the course
    must come out as yaml.safe_load reads it, and a malformed one still quotes its line under a caret."""
    import yaml

    from grader.core.exercise import parse_yaml

    files = sorted(EXERCISES.rglob("*.yaml"))
    assert len(files) > 30
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert parse_yaml(text) == yaml.safe_load(text), path
    with pytest.raises(yaml.YAMLError) as raised:
        parse_yaml("title: L\nsummary: a: b\n")
    assert "line 2, column 11:\n    summary: a: b\n              ^" in str(raised.value)
