"""Transfer, not transcription (issue 50, section 1): no card or exercise prompt of the course, in any language,
holds four or more consecutive lines of any exercise's solution.py, whitespace and local names aside. A
three-line idiom (step, update, zero_grad) may be taught; the worked solution, shown after passing, is where
the answer lives.

The one exception is lesson 1's twelve cards, the seed lesson's own page (their snippets are the original
lesson's, in all four languages): amp-step, the seed's own exercise, may stay close to them, and the
exercises after it ask for more than those snippets."""
from __future__ import annotations

import ast
import builtins
import keyword
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from academy.i18n import TRANSLATED, load_translations
from grader.core.course import Card, ExerciseStep, load_course

RUN = 4  # consecutive lines that make a transcription; three may be taught

# Lesson 1's cards 01-12 reproduce the seed lesson's page (docs/course.md): their code stays as it was.
SEED_CARDS = {
    ("mixed-precision", step_id) for step_id in (
        "what-mixed-precision-means", "why-half-precision-is-faster", "the-catch-with-16-bit", "meet-autocast",
        "what-autocast-wraps", "meet-gradscaler", "scale-the-loss", "step-through-the-scaler",
        "update-the-scale-factor", "the-full-amp-step", "when-to-reach-for-it", "recap",
    )
}

FENCED = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
TOKEN = re.compile(
    r"""(?P<comment>\#[^\n]*)
      | (?P<string>[rbuRBUfF]{0,2}(?:'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
      | (?P<number>\d[\w.]*)
      | (?P<name>[A-Za-z_]\w*)
      | (?P<op>\*\*=?|//=?|->|:=|==|!=|<=|>=|<<|>>|[-+*/%@&|^]=|\.\.\.|[^\sA-Za-z_\d])""",
    re.X,
)
# Names that are the API, not the learner's choice: builtins and the modules the course imports under a name.
GLOBAL_NAMES = set(dir(builtins)) | {"torch", "nn", "F", "np", "math", "time", "functools", "contextlib", "os"}
STATEMENT_HEADS = {"if", "elif", "while", "return", "assert"}  # `if x < y:` and `skipped = x < y` say one thing


def _tokens(line: str) -> list[tuple[str, str]]:
    return [(match.lastgroup, match.group()) for match in TOKEN.finditer(line) if match.lastgroup != "comment"]


def _normalise(tokens: list[tuple[str, str]]) -> str:
    """One logical line with every local name as `_`, strings in one quoting, and no assignment target."""
    out: list[str] = []
    depth = 0
    for index, (kind, text) in enumerate(tokens):
        before = tokens[index - 1][1] if index else ""
        after = tokens[index + 1][1] if index + 1 < len(tokens) else ""
        if kind == "op":
            depth += text in "([{"
            depth -= text in ")]}"
        if kind == "name" and not (keyword.iskeyword(text) or before == "." or text in GLOBAL_NAMES
                                   or (depth and after == "=")):  # a keyword argument's name is the API's
            text = "_"
        elif kind == "string":
            text = repr(text.lstrip("rbuRBUfF")[1:-1])
        out.append(text)
    # `_ = expr` and `_, _ = expr` bind a local name: what is transcribed is the expression.
    if "=" in out and set(out[: out.index("=")]) <= {"_", ",", "(", ")", "*"}:
        out = out[out.index("=") + 1:]
    if out and out[0] in STATEMENT_HEADS:
        out = out[1:]
    if out and out[-1] == ":" and out[0] not in {"def", "for", "with", "else", "try", "except", "finally"}:
        out = out[:-1]
    return " ".join(out)


def code_lines(code: str) -> list[str]:
    """The normalised logical lines of a piece of code: a statement wrapped over lines is one line; blank
    lines and comments are not lines."""
    lines: list[str] = []
    pending: list[tuple[str, str]] = []
    depth = 0
    for physical in code.splitlines():
        tokens = _tokens(physical)
        pending += tokens
        depth += sum(text in "([{" for kind, text in tokens if kind == "op")
        depth -= sum(text in ")]}" for kind, text in tokens if kind == "op")
        if depth <= 0 or len(pending) > 400:
            if pending:
                lines.append(_normalise(pending))
            pending, depth = [], 0
    if pending:
        lines.append(_normalise(pending))
    return [line for line in lines if line]


def solution_lines(path: Path) -> list[str]:
    """A solution's code lines, its docstrings left out (they are prose)."""
    source = path.read_text()
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docstrings |= set(range(body[0].lineno, body[0].end_lineno + 1))
    kept = [line for number, line in enumerate(source.splitlines(), 1) if number not in docstrings]
    return code_lines("\n".join(kept))


def text_lines(markdown: str) -> list[str]:
    """The code lines a learner reads in a card or a prompt: every fenced block's, in order."""
    return [line for block in FENCED.findall(markdown) for line in code_lines(block)]


@dataclass(frozen=True)
class Transcription:
    solution: str
    lines: tuple[str, ...]


def _contiguous_in(run: list[str], lines: list[str]) -> bool:
    return any(lines[i:i + len(run)] == run for i in range(len(lines) - len(run) + 1))


def transcriptions(text: list[str], solutions: dict[str, list[str]]) -> list[Transcription]:
    """Every longest run of RUN or more consecutive text lines that is also consecutive in a solution."""
    found = []
    for name, solution in solutions.items():
        runs = {tuple(solution[i:i + RUN]) for i in range(len(solution) - RUN + 1)}
        i = 0
        while i <= len(text) - RUN:
            if tuple(text[i:i + RUN]) not in runs:
                i += 1
                continue
            end = i + RUN
            while end < len(text) and _contiguous_in(text[i:end + 1], solution):
                end += 1
            found.append(Transcription(name, tuple(text[i:end])))
            i = end
    return found


@pytest.fixture(scope="module")
def course():
    return load_course()


@pytest.fixture(scope="module")
def solutions(course) -> dict[str, list[str]]:
    return {exercise.id: solution_lines(exercise.solution_path) for exercise in course.exercises.values()}


def _texts(course) -> list[tuple[str, str, str, str]]:
    """(lesson, step, language, markdown) of every card and prompt the course shows, translations included."""
    translations = load_translations(course)
    texts = []
    for lesson in course.lessons:
        for step in lesson.steps:
            if not isinstance(step, Card | ExerciseStep) or (lesson.id, step.id) in SEED_CARDS:
                continue
            english = step.markdown if isinstance(step, Card) else step.exercise.prompt
            texts.append((lesson.id, step.id, "en", english))
            for language in TRANSLATED:
                translated = translations[(lesson.id, language)].prose(step)
                if translated:
                    texts.append((lesson.id, step.id, language, translated))
    return texts


TEXTS = _texts(load_course())


@pytest.mark.parametrize(("lesson", "step", "language", "markdown"), TEXTS,
                         ids=[f"{lesson}/{step}/{language}" for lesson, step, language, _ in TEXTS])
def test_no_card_or_prompt_transcribes_a_solution(solutions, lesson, step, language, markdown):
    found = transcriptions(text_lines(markdown), solutions)
    assert not found, "\n".join(
        f"{lesson}/{step} ({language}) holds {len(t.lines)} consecutive lines of {t.solution}/solution.py:\n  "
        + "\n  ".join(t.lines) for t in found)


# The detector itself: what it must see through, and the idiom it must let pass.

TOKEN_WEIGHTED_TODAY = '''
```python
for start in range(0, len(micro_batches), accum_steps):
    window = micro_batches[start:start + accum_steps]
    window_tokens = sum((labels != -100).sum() for _, labels in window)
    for tokens, labels in window:
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="sum")
        (loss / window_tokens).backward()
    optimizer.step()
    optimizer.zero_grad()
```
'''


def test_the_card_token_weighted_had_is_a_transcription(solutions):
    """Card "Divide by the window's tokens" as it was on main before issue 50: its loop is the solution's."""
    found = transcriptions(text_lines(TOKEN_WEIGHTED_TODAY), solutions)
    assert any(t.solution == "gradient-accumulation/token-weighted" and len(t.lines) >= 5 for t in found)


def test_renamed_locals_and_rewrapped_lines_are_still_a_transcription(solutions):
    renamed = '''
```python
for s in range(0,len(mbs),k):
    w = mbs[s : s + k]
    n = sum((lab != -100).sum()
            for _, lab in w)
    for toks, lab in w:   # same loop, other names
        out = model(toks)
```
'''
    found = transcriptions(text_lines(renamed), solutions)
    assert any(t.solution == "gradient-accumulation/token-weighted" for t in found)


def test_a_skip_test_written_as_an_assignment_is_the_solutions_if(solutions):
    """skipped-steps' prompt before issue 50 gave the solution's four-line test, its last line as `skipped = ...`."""
    prompt = '''
```python
scale_before = scaler.get_scale()
scaler.step(optimizer)
scaler.update()
skipped = scaler.get_scale() < scale_before
```
'''
    found = transcriptions(text_lines(prompt), solutions)
    assert any(t.solution == "mixed-precision/skipped-steps" for t in found)


def test_a_three_line_idiom_may_be_taught(solutions):
    idiom = '''
```python
scaler.step(optimizer)
scaler.update()
optimizer.zero_grad()
```
'''
    assert transcriptions(text_lines(idiom), solutions) == []
