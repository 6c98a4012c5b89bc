"""The translated course content says what the English says in code: lesson 1's cards and quiz and issue 50's
three new exercises are complete in Italian, Japanese and Arabic, their code, API names and numbers are the
English ones character for character, and every id a translation names is the English one (docs/course.md,
"Translations")."""
from __future__ import annotations

import re

import pytest

from academy.i18n import TRANSLATED, load_course_translations, load_translations
from grader.core.course import Card, ExerciseStep, load_course

FENCED = re.compile(r"```.*?```", re.S)
INLINE = re.compile(r"`([^`\n]+)`")
SPAN = re.compile(r"`([^`]+)`")  # a prompt's inline code may wrap onto the next line, as markdown allows
NUMBER = re.compile(r"\d+(?:\.\d+)?")
# (lesson, exercise) translated in every language: issue 50's new exercises ("its titles in it/ja/ar").
TRANSLATED_EXERCISES = [("mixed-precision", "fused-skip"), ("gradient-accumulation", "fsdp2-accumulate"),
                        ("profiling", "stop-recompiling")]


@pytest.fixture(scope="module")
def course():
    return load_course()


@pytest.fixture(scope="module")
def translations(course):
    return load_translations(course)  # raises CourseError on a file that names what the English lacks


def _code(markdown: str) -> tuple[list[str], set[str]]:
    """(the code blocks in order, the inline code spans) of a card."""
    blocks = FENCED.findall(markdown)
    return blocks, set(INLINE.findall(FENCED.sub("", markdown)))


def _prompt_code(markdown: str) -> tuple[list[str], set[str]]:
    """(the code blocks in order, the inline code spans with their line breaks as spaces) of a prompt."""
    return FENCED.findall(markdown), {" ".join(span.split()) for span in SPAN.findall(FENCED.sub("", markdown))}


def _notes(markdown: str) -> int:
    return sum(line.startswith("> **") for line in markdown.splitlines())


@pytest.mark.parametrize("language", TRANSLATED)
def test_lesson_one_is_translated_but_for_its_exercises_before_fused_skip(course, translations, language):
    lesson = course.lesson("mixed-precision")
    text = translations[(lesson.id, language)]
    cards = [step for step in lesson.steps if isinstance(step, Card)]
    assert set(text.cards) == {card.id for card in cards}
    assert text.title and text.summary and text.quiz and text.quiz.title
    for question in lesson.quiz.questions:
        translated = text.quiz.questions[question.id]
        assert translated.question
        assert set(translated.options) == {option.id for option in question.options}, question.id
        assert all(entry.get("text") and entry.get("explanation") for entry in translated.options.values())
    exercises = {step.id for step in lesson.steps if isinstance(step, ExerciseStep)}
    assert set(text.exercises) == {"fused-skip"}
    done, total = text.pieces(lesson)
    assert done == total - len(exercises - {"fused-skip"})


@pytest.mark.parametrize("language", TRANSLATED)
@pytest.mark.parametrize(("lesson_id", "exercise_id"), TRANSLATED_EXERCISES)
def test_new_exercises_are_translated_whole_with_their_code(course, translations, language, lesson_id,
                                                            exercise_id):
    """Title, prompt and every check's title; the prompt keeps the English code blocks, inline code and numbers."""
    lesson = course.lesson(lesson_id)
    step = next(step for step in lesson.steps if isinstance(step, ExerciseStep) and step.id == exercise_id)
    data = translations[(lesson_id, language)].exercises[exercise_id]
    english = step.exercise
    assert data.title and data.title != english.title
    prompt = str(data.prompt)
    assert _prompt_code(prompt) == _prompt_code(english.prompt), (language, exercise_id)
    prose = [SPAN.sub("", FENCED.sub("", text)) for text in (prompt, english.prompt)]
    # Every number the English states is stated (a translation may write "one" as 1, as Japanese does).
    assert set(NUMBER.findall(prose[1])) <= set(NUMBER.findall(prose[0])), (language, exercise_id)
    checks = data.checks
    assert set(checks) == {check.id for check in english.checks}, (language, exercise_id)
    for check in english.checks:
        title = checks[check.id]["title"]
        assert title and title != check.title, (language, exercise_id, check.id)


@pytest.mark.parametrize("language", TRANSLATED)
def test_translated_cards_keep_the_code_and_the_notes(course, translations, language):
    """Code blocks byte for byte, the same inline code (API names, identifiers), one note for each English one."""
    checked = 0
    for lesson in course.lessons:
        text = translations[(lesson.id, language)]
        for card in (step for step in lesson.steps if isinstance(step, Card) and step.id in text.cards):
            title, markdown = text.cards[card.id]
            assert title and title != card.title, (lesson.id, card.id)
            assert _code(markdown) == _code(card.markdown), (language, lesson.id, card.id)
            assert _notes(markdown) == _notes(card.markdown), (language, lesson.id, card.id)
            checked += 1
    assert checked >= 12


def test_every_lesson_and_the_course_have_a_translated_heading(course, translations):
    headings = load_course_translations(course)
    for language in TRANSLATED:
        assert headings[language].title and headings[language].summary != course.summary
        for lesson in course.lessons:
            text = translations[(lesson.id, language)]
            assert text.title and text.summary and text.summary != lesson.summary, (language, lesson.id)
