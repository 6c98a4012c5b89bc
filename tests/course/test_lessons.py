"""Lessons 2-4 are in the course with cards, an exercise, a quiz and enough known mistakes."""
import pytest

from grader.core.course import Card, ExerciseStep, Quiz, load_course

LESSONS = ["gradient-accumulation", "profiling", "gpu-memory"]


@pytest.fixture(scope="module")
def course():
    return load_course()


def test_course_lists_all_four_lessons_in_order(course):
    assert [lesson.id for lesson in course.lessons] == ["mixed-precision", *LESSONS]


@pytest.mark.parametrize("lesson_id", LESSONS)
def test_lesson_has_cards_exercise_quiz_and_recap(course, lesson_id):
    lesson = course.lesson(lesson_id)
    kinds = [type(step) for step in lesson.steps]
    assert kinds.count(Card) >= 8
    assert ExerciseStep in kinds and Quiz in kinds
    assert isinstance(lesson.steps[-1], Card) and lesson.steps[-1].title == "Recap"
    # Every card but the recap teaches with a code sample, as lesson 1's do.
    for step in lesson.steps[:-1]:
        if isinstance(step, Card):
            assert "```python" in step.markdown, step.title
    quiz = lesson.quiz
    assert quiz is not None and len(quiz.questions) >= 1
    for question in quiz.questions:
        assert len(question.options) >= 3
        assert all(option.explanation.strip() for option in question.options)


@pytest.mark.parametrize("lesson_id", LESSONS)
def test_each_exercise_has_at_least_four_described_mistakes(course, lesson_id):
    for exercise in course.lesson(lesson_id).exercises:
        mistakes = exercise.mistakes()
        assert len(mistakes) >= 4, exercise.id
        for mistake in mistakes:
            assert mistake.expect_fail, mistake.path
            assert mistake.description != mistake.path.stem, f"{mistake.path}: add a '# mistake:' line"
        declared = {check.id for check in exercise.checks}
        caught = set().union(*(m.expect_fail for m in mistakes))
        assert caught == declared, f"{exercise.id}: no mistake proves these checks: {declared - caught}"
