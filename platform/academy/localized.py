"""The course and its lessons as one page shows them in one language: translated where the course's translation
files (academy/i18n/course.py) say so, else in English, marked as such (`Untranslated`)."""
from __future__ import annotations

import re

from markupsafe import Markup

from academy.content import get_content
from academy.i18n import Heading, LessonText, QuestionText, current_language
from academy.rendering import Untranslated
from grader.core.course import Course, ExerciseStep, Lesson, QuizOption, QuizQuestion, Step

# An inline code span of sanitised Markdown (render_markdown): `<code>` not right after a code block's `<pre ...>`.
_INLINE_CODE = re.compile(r'(?<!<pre class="highlight">)(?<!<pre>)<code>')


class LocalizedHeading:
    """A course's or a lesson's title and summary as one page shows them in one language: translated where a
    file gives them, else the English as Untranslated; `missing` says whether anything shown fell back."""

    def __init__(self, english: Course | Lesson, language: str, text: Heading | None):
        self._english, self.language, self.text = english, language, text
        self.missing = False

    def _pick(self, translated: str | None, english: str) -> str:
        if self.text is None:  # an English page
            return english
        if not translated:
            self.missing = True
            return Untranslated(english)
        return translated

    @property
    def title(self) -> str:
        return self._pick(self.text and self.text.title, self._english.title)

    @property
    def summary(self) -> str:
        return self._pick(self.text and self.text.summary, self._english.summary)


class Localized(LocalizedHeading):
    """A lesson as one page shows it in one language: its heading, steps and quiz."""

    text: LessonText | None

    def __init__(self, lesson: Lesson, language: str, text: LessonText | None):
        super().__init__(lesson, language, text)
        self.lesson = lesson

    def _step_title(self, step: Step) -> str | None:
        found = self.text.step(step.id)  # whatever its kind: each step's file gives its title
        return found.title if found else None

    def step_title(self, step: Step, *, count: bool = True) -> str:
        """The step's title; `count=False` for a mention (the step list, a link) that does not make this page
        say it shows English."""
        if self.text is None:
            return step.title
        found = self._step_title(step)
        if count:
            return self._pick(found, step.title)
        return found or Untranslated(step.title)

    def step_html(self, step: Step, english_html: str) -> Markup | str:
        """A card's or exercise prompt's HTML in this language, else the English (`english` marks it)."""
        if self.text is None or step.page_markdown() is None:  # a quiz lays out its own (marked) texts
            return english_html
        found = self.text.html.get(step.id)
        if found:
            return Markup(found)  # render_markdown's output, sanitised by nh3
        self.missing = True
        return english_html

    @staticmethod
    def code_ltr(html: Markup | str) -> Markup:
        """An exercise prompt's HTML with each inline code span laid out left to right (`<code dir="ltr">`): on an
        Arabic page `train_step(model, x)` keeps its parentheses and commas in place. Code blocks are left as
        they are. The stylesheet lays code out left to right too; the attribute says so to what reads the markup."""
        return Markup(_INLINE_CODE.sub('<code dir="ltr">', str(html)))

    def english(self, step: Step) -> Markup:
        """` lang="en" dir="ltr"` for the prose of a card or exercise shown in English on another language's
        page (a quiz marks each of its texts instead: `marked`)."""
        if self.text is None or step.page_markdown() is None or step.id in self.text.html:
            return Markup("")
        return Markup(' lang="en" dir="ltr"')

    def _question(self, question: QuizQuestion) -> QuestionText:
        quiz = self.text.quiz if self.text else None
        return (quiz.questions.get(question.id) if quiz else None) or QuestionText()

    def question(self, question: QuizQuestion) -> str:
        return self._pick(self._question(question).question, question.question)

    def option(self, question: QuizQuestion, option: QuizOption) -> str:
        return self._pick(self._question(question).options.get(option.id, {}).get("text"), option.text)

    def explanation(self, question: QuizQuestion, option: QuizOption) -> str:
        return self._pick(self._question(question).options.get(option.id, {}).get("explanation"),
                          option.explanation)

    def check_title(self, step: ExerciseStep, check_id: str, english: str) -> str:
        found = self.text.step(step.id) if self.text else None
        checks = found.checks if found else {}
        return self._pick((checks.get(check_id) or {}).get("title"), english)


def localize(lesson: Lesson, language: str | None = None) -> Localized:
    language = language or current_language()
    text = get_content().translations.get((lesson.id, language)) if language != "en" else None
    return Localized(lesson, language, text)


def localize_course(course: Course, language: str | None = None) -> LocalizedHeading:
    language = language or current_language()
    text = get_content().course_translations.get(language) if language != "en" else None
    return LocalizedHeading(course, language, text)
